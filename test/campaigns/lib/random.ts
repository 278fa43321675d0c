// Seeded randomness for campaigns: the same seed gives the same cases on every machine.

/** A PRNG (mulberry32) returning floats in [0, 1) from a 32-bit seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The seed of case `index` of a campaign started from `seed`: a case found failing is re-run alone with
 * `--seed <caseSeed> --count 1`, because case 0 of a campaign started from `caseSeed` is that same case.
 */
export function caseSeed(seed: number, index: number): number {
  if (index === 0) return seed >>> 0;
  let h = (seed ^ Math.imul(index, 0x9e3779b1)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

/** An integer in [lo, hi] from `rand`. */
export function intBetween(rand: () => number, lo: number, hi: number): number {
  return lo + Math.floor(rand() * (hi - lo + 1));
}

/** One of `items`, picked with `rand`. */
export function pick<T>(rand: () => number, items: readonly T[]): T {
  return items[Math.floor(rand() * items.length)]!;
}
