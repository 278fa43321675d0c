// The host limits of the protocol fuzz: the defaults, with timers short enough for thousands of cases.
import { parseLimits } from '../../../host/config/limits.js';
import { FUZZ_MAX_UPDATES } from './cases.js';
import { FUZZ_MAX_LINE_BYTES } from './messages.js';

/**
 * Timers of seconds, not minutes, but long enough for a 2-core machine shared with other work (a 3 s idle limit timed
 * out healthy runs there at load 20: the host's own event loop stalled that long), and quotas a case reaches cheaply.
 * `exitDrainMs` stays the default on purpose: see docs/benchmarks.md, "Protocol fuzz", on what it costs under load.
 */
export const FUZZ_LIMITS = parseLimits({
  handshakeTimeoutMs: 10_000,
  wallClockMs: 30_000,
  idleMs: 10_000,
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
