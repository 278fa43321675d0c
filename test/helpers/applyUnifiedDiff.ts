// Applies a unified diff (hunks only, as host/changes/unifiedDiff.ts writes them) to a text: the property tests' check
// that a recorded diff says exactly how the old text became the new one. Throws when a hunk does not fit.

/** `before` with the hunks of `diff` applied. */
export function applyUnifiedDiff(before: string, diff: string): string {
  const old = before === '' ? [] : before.split(/(?<=\n)/);
  const out: string[] = [];
  let at = 0;
  const lines = diff === '' ? [] : diff.split('\n').slice(0, -1);
  for (let i = 0; i < lines.length;) {
    const header = /^@@ -(\d+),(\d+) \+(\d+),(\d+) @@$/.exec(lines[i]!);
    if (!header) throw new Error(`not a hunk header: ${lines[i]}`);
    const oldStart = Number(header[1]);
    const oldCount = Number(header[2]);
    const target = oldCount === 0 ? oldStart : oldStart - 1;
    while (at < target) out.push(old[at++]!);
    i++;
    while (i < lines.length && !lines[i]!.startsWith('@@')) {
      const tag = lines[i]![0];
      let text = `${lines[i]!.slice(1)}\n`;
      if (lines[i + 1] === '\\ No newline at end of file') {
        text = text.slice(0, -1);
        i++;
      }
      i++;
      if (tag === '+') out.push(text);
      else {
        if (old[at] !== text) throw new Error(`hunk does not fit at old line ${at + 1}`);
        if (tag === ' ') out.push(text);
        at++;
      }
    }
  }
  while (at < old.length) out.push(old[at++]!);
  return out.join('');
}
