// The soak's flatness checks, pure over sampled series so a unit test can plant a leak
// (test/unit/campaigns/flat.test.ts).

/** How a series must stay flat: a bounded trend (`trend`) or back exactly to its baseline (`exact`). */
export type FlatRule = { kind: 'trend'; relative: number; absolute: number } | { kind: 'exact' };

/** Median of a non-empty list. */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/**
 * Whether `series` (samples in run order; `settled`: the value after the last run and an idle second, `baseline`:
 * the same after the warm-up) is flat under `rule`, as a sentence if not. `trend`: the median of the last tenth of
 * the samples is at most the median of the second tenth × (1 + relative) + absolute (the first tenth is warm-up:
 * caches, JIT, SQLite's page cache filling). `exact`: the settled value equals the baseline, and no sample of the
 * last half exceeds the largest of the first half (a leak that is freed at the very end still shows).
 */
export function flatness(
  name: string,
  series: readonly number[],
  baseline: number,
  settled: number,
  rule: FlatRule,
): string | undefined {
  if (series.length < 10) return `${name}: ${series.length} samples, at least 10 are needed to judge a trend`;
  const tenth = Math.max(1, Math.floor(series.length / 10));
  if (rule.kind === 'trend') {
    const early = median(series.slice(tenth, 2 * tenth));
    const late = median(series.slice(-tenth));
    const bound = early * (1 + rule.relative) + rule.absolute;
    return late > bound
      ? `${name} grew: last-tenth median ${late} > second-tenth median ${early} × ${1 + rule.relative} + ` +
          `${rule.absolute} = ${bound}`
      : undefined;
  }
  if (settled !== baseline) return `${name}: ${settled} after the runs, ${baseline} at the baseline`;
  const half = series.length >> 1;
  const firstMax = Math.max(...series.slice(0, half));
  const lateMax = Math.max(...series.slice(half));
  return lateMax > firstMax ? `${name}: up to ${lateMax} in the second half, ${firstMax} in the first` : undefined;
}
