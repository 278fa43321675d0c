import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { HostError } from '../errors.js';

/** The first wait after a write the store refused, doubled after each failure up to {@link MAX_WAIT_MS}. */
const FIRST_WAIT_MS = 100;
/** The longest wait between two tries. */
const MAX_WAIT_MS = 2_000;

/**
 * Write what must be recorded — a run's end, a message its runner took — trying again while the store refuses it (a
 * database restart, a connection cut, a disk full a moment): such a record is the truth of something that happened,
 * and a run whose end was never stored held its conversation and its claim for ever (outside attack, 2026-12-03).
 * Gives up, rethrowing, on `LEASE_LOST` (the run is another host's now: its takeover records it) and once `signal`
 * aborts (the host is stopping: its next start's recovery, or a takeover, ends the run). The first failure and the
 * eventual success are logged; the waits double from 100 ms to 2 s.
 */
export async function untilStored<T>(
  write: () => T,
  options: { what: string; log: Logger; signal?: AbortSignal },
): Promise<T> {
  let wait = FIRST_WAIT_MS;
  let failures = 0;
  for (;;) {
    try {
      const written = write();
      if (failures > 0) options.log.warn({ what: options.what, failures }, 'stored after the store refused it');
      return written;
    } catch (error) {
      if ((error instanceof HostError && error.code === 'LEASE_LOST') || options.signal?.aborted) throw error;
      if (failures++ === 0)
        options.log.error(
          { err: error, what: options.what },
          'the store refused a record; trying again until it takes it',
        );
    }
    // A timed back-off, not a wait for an event: what would tell that the store takes writes again is the store itself
    // (its commit signal rides on the lost connection), so the next try is the only probe there is.
    try {
      await sleep(wait, undefined, { signal: options.signal });
    } catch {
      // Aborted while waiting: one last try above decides.
    }
    wait = Math.min(wait * 2, MAX_WAIT_MS);
  }
}
