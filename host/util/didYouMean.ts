/**
 * Longest word or name a typo is suggested for. A guess for a longer one helps nobody, and untrusted input (an
 * unknown config key of a megabyte) must not make the comparison cost: past this, no distance is computed.
 */
export const SUGGEST_MAX_CHARS = 32;
/** Most known names a word is compared with: a longer list (a runner schema's 2 000 properties) gets no guess. */
export const SUGGEST_MAX_NAMES = 256;
/**
 * How many words of one validation get a guess (callers keep the count): with the bounds above, a guess costs at
 * most {@link SUGGEST_MAX_NAMES} comparisons of two short strings, so a validation's guesses stay a few milliseconds.
 */
export const SUGGEST_MAX_WORDS = 50;

/**
 * Edit distance with adjacent transpositions counted as one edit (optimal string alignment),
 * so `modles` is one edit from `models`; `limit + 1` as soon as it is known to exceed `limit`. Three rows of the
 * table at a time, only the cells within `limit` of the diagonal: time O(|a| × limit), memory O(|b|).
 */
export function editDistance(a: string, b: string, limit = Math.max(a.length, b.length)): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  const over = limit + 1;
  let before = new Uint32Array(b.length + 1).fill(over); // row i - 2
  let previous = Uint32Array.from({ length: b.length + 1 }, (_, j) => Math.min(j, over)); // row i - 1
  let current = new Uint32Array(b.length + 1); // row i
  for (let i = 1; i <= a.length; i++) {
    current.fill(over);
    current[0] = Math.min(i, over);
    let rowBest = current[0]!;
    for (let j = Math.max(1, i - limit); j <= Math.min(b.length, i + limit); j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, before[j - 2]! + 1);
      current[j] = Math.min(best, over);
      rowBest = Math.min(rowBest, current[j]!);
    }
    if (rowBest > limit) return over; // every later row only grows
    [before, previous, current] = [previous, current, before];
  }
  return Math.min(previous[b.length]!, over);
}

/** What one validation may still spend on guesses: {@link SUGGEST_MAX_WORDS} words, shared by all its checks. */
export class SuggestBudget {
  private left = SUGGEST_MAX_WORDS;

  /** Takes one guess from the budget; false once it is spent. */
  take(): boolean {
    if (this.left <= 0) return false;
    this.left -= 1;
    return true;
  }
}

/**
 * The known name closest to `word`, if it is close enough to be a likely typo: equal ignoring
 * case, or within about a third of the longer name's length in edits (at least one). The cost is
 * bounded whatever the input: no guess for a word over {@link SUGGEST_MAX_CHARS} or among more than
 * {@link SUGGEST_MAX_NAMES} names, longer names are skipped, each comparison stops at the edits
 * allowed, and with a `budget` (one per validation) no guess once it is spent.
 */
export function didYouMean(word: string, known: Iterable<string>, budget?: SuggestBudget): string | undefined {
  if (word.length > SUGGEST_MAX_CHARS) return undefined;
  const names: string[] = [];
  for (const name of known) if (names.push(name) > SUGGEST_MAX_NAMES) return undefined;
  if (budget && !budget.take()) return undefined;
  const lower = word.toLowerCase();
  let best: { name: string; distance: number } | undefined;
  for (const name of names) {
    if (name === word || name.length > SUGGEST_MAX_CHARS) continue;
    const allowed = Math.max(1, Math.floor(Math.max(word.length, name.length) / 3));
    const distance = editDistance(lower, name.toLowerCase(), allowed);
    if (distance <= allowed && (!best || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}
