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
 * the same after the warm-up) is flat under `rule`, as a sentence if not. Both kinds compare the median of the last
 * tenth of the samples with the median of the second tenth (the first tenth is warm-up: caches, JIT, SQLite's page
 * cache filling), medians so that one sample caught mid-way (a socket closing, a child not yet reaped) does not
 * count. `trend`: the late median is at most the early one × (1 + relative) + absolute. `exact`: the late median is
 * at most the early one, and the settled value equals the baseline.
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
  const early = median(series.slice(tenth, 2 * tenth));
  const late = median(series.slice(-tenth));
  const [relative, absolute] = rule.kind === 'trend' ? [rule.relative, rule.absolute] : [0, 0];
  const bound = early * (1 + relative) + absolute;
  if (late > bound)
    return rule.kind === 'trend'
      ? `${name} grew: last-tenth median ${late} > second-tenth median ${early} × ${1 + relative} + ${absolute} = ` +
          `${bound}`
      : `${name} grew: last-tenth median ${late} > second-tenth median ${early}`;
  if (rule.kind === 'exact' && settled !== baseline)
    return `${name}: ${settled} after the runs, ${baseline} at the baseline`;
  return undefined;
}
