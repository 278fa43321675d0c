/**
 * Edit distance with adjacent transpositions counted as one edit (optimal string alignment),
 * so `modles` is one edit from `models`.
 */
export function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = best;
    }
  }
  return rows[a.length]![b.length]!;
}

/**
 * The known name closest to `word`, if it is close enough to be a likely typo: equal ignoring
 * case, or within about a third of the longer name's length in edits (at least one).
 */
export function didYouMean(word: string, known: Iterable<string>): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const name of known) {
    if (name === word) continue;
    const distance =
      name.toLowerCase() === word.toLowerCase() ? 0 : editDistance(word.toLowerCase(), name.toLowerCase());
    if (
      distance <= Math.max(1, Math.floor(Math.max(word.length, name.length) / 3)) &&
      (!best || distance < best.distance)
    )
      best = { name, distance };
  }
  return best?.name;
}
