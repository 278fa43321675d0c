/** Median, p90, p95 and p99 of a sample, in its own unit. */
export function summarize(values: number[]): { median: number; p90: number; p95: number; p99: number; n: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { median: at(0.5), p90: at(0.9), p95: at(0.95), p99: at(0.99), n: sorted.length };
}

/** A number with `digits` decimals. */
export const fmt = (n: number, digits = 1) => n.toFixed(digits);
