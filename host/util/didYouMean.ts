/**
 * Longest word or name a typo is suggested for. A guess for a longer one helps nobody, and untrusted input (an
 * unknown config key of a megabyte) must not make the comparison cost: past this, no distance is computed.
 */
export const SUGGEST_MAX_CHARS = 64;

/**
 * Edit distance with adjacent transpositions counted as one edit (optimal string alignment),
 * so `modles` is one edit from `models`. Three rows of the table at a time: memory grows with `b` only.
 */
export function editDistance(a: string, b: string): number {
  let before = new Uint32Array(b.length + 1); // row i - 2
  let previous = Uint32Array.from({ length: b.length + 1 }, (_, j) => j); // row i - 1
  let current = new Uint32Array(b.length + 1); // row i
  for (let i = 1; i <= a.length; i++) {
    current[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, before[j - 2]! + 1);
      current[j] = best;
    }
    [before, previous, current] = [previous, current, before];
  }
  return previous[b.length]!;
}

/**
 * The known name closest to `word`, if it is close enough to be a likely typo: equal ignoring
 * case, or within about a third of the longer name's length in edits (at least one). Words and
 * names over {@link SUGGEST_MAX_CHARS} get no guess, and a pair whose lengths alone differ by more
 * than allowed is not compared: the cost is bounded whatever the input.
 */
export function didYouMean(word: string, known: Iterable<string>): string | undefined {
  if (word.length > SUGGEST_MAX_CHARS) return undefined;
  const lower = word.toLowerCase();
  let best: { name: string; distance: number } | undefined;
  for (const name of known) {
    if (name === word || name.length > SUGGEST_MAX_CHARS) continue;
    const allowed = Math.max(1, Math.floor(Math.max(word.length, name.length) / 3));
    if (Math.abs(name.length - word.length) > allowed) continue;
    const distance = editDistance(lower, name.toLowerCase());
    if (distance <= allowed && (!best || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}
