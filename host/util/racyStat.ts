/**
 * How long before a file's stat was recorded its ctime must lie for a later equal stat to stand for its content.
 * The kernel stamps ctime from a coarse clock (a tick of up to a few ms): a write in the same tick as the recording
 * could leave the stat equal (git's "racy clean" entries). Generous, so a clock step of that size does not matter.
 */
export const RACY_MS = 2_000;

/**
 * Whether a stat with this ctime, recorded at `recordedAtMs`, may stand for the content read then (`racyMs`: the
 * margin, {@link RACY_MS} unless a test passes 0).
 */
export const settledBefore = (ctimeNs: bigint, recordedAtMs: number, racyMs = RACY_MS): boolean =>
  // At least `racyMs` older (with 0, a change in the very millisecond of the recording counts as settled: a test's
  // opt-out of the window must not depend on the clock having ticked).
  ctimeNs / 1_000_000n <= BigInt(Math.floor(recordedAtMs) - racyMs);
