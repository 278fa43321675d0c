// The host limits of the protocol fuzz: the defaults, with timers short enough for thousands of cases.
import { parseLimits } from '../../../host/config/limits.js';
import { FUZZ_MAX_UPDATES } from './cases.js';
import { FUZZ_MAX_LINE_BYTES } from './messages.js';

/** Timers a few seconds long (generous for a loaded 2-core machine), quotas that a case can reach cheaply. */
export const FUZZ_LIMITS = parseLimits({
  handshakeTimeoutMs: 4_000,
  wallClockMs: 15_000,
  idleMs: 3_000,
  cancelGraceMs: 1_000,
  shutdownGraceMs: 1_000,
  termGraceMs: 500,
  killConfirmMs: 3_000,
  maxLineBytes: FUZZ_MAX_LINE_BYTES,
  maxUpdates: FUZZ_MAX_UPDATES,
  maxStdoutBytes: 16 * 1024 * 1024,
  maxEventBytes: 16 * 1024 * 1024,
  // Small quota images: the end-to-end tier mounts two per run.
  diskBytes: 16 * 1024 * 1024,
  inodes: 1_000,
});

/** Past this, a case that has not ended counts as a hang (wall clock, the whole shutdown ladder, and slack). */
export const CASE_DEADLINE_MS =
  FUZZ_LIMITS.wallClockMs +
  FUZZ_LIMITS.shutdownGraceMs * 2 +
  FUZZ_LIMITS.termGraceMs * 2 +
  FUZZ_LIMITS.killConfirmMs * 3 +
  30_000;
