import { DIFF_MAX_CHARS, DIFF_MAX_EDITS, DIFF_MAX_LINES } from './caps.js';

/** A diff, or why none was made (the bounds below); `truncated`: cut at a line to `maxChars`. */
export type DiffResult =
  { ok: true; diff: string; added: number; removed: number; truncated: boolean } | { ok: false; reason: string };

/** The bounds of one diff (defaults: host/changes/caps.ts). */
export interface DiffBounds {
  maxLines?: number;
  maxEdits?: number;
  maxChars?: number;
  context?: number;
}

/** One line of the edit script: kept, removed from the old text or added by the new one. */
interface Op {
  tag: ' ' | '-' | '+';
  line: string;
}

/** Lines with their `\n` (the last may have none), so a missing final newline is a difference of its own. */
function linesOf(text: string): string[] {
  return text === '' ? [] : text.split(/(?<=\n)/);
}

/**
 * The unified diff (hunks only, no file headers: the path is recorded beside it, never inside text a reader parses)
 * from `before` to `after`, by Myers' algorithm over interned lines, so a comparison is one integer compare whatever
 * the lines hold. Bounded: more than `maxLines` lines on a side or more than `maxEdits` edits gives `ok: false` with
 * the reason (the cost is lines × edits, so an adversarial pair of files cannot make the host spin).
 */
export function unifiedDiff(before: string, after: string, bounds: DiffBounds = {}): DiffResult {
  const { maxLines = DIFF_MAX_LINES, maxEdits = DIFF_MAX_EDITS, maxChars = DIFF_MAX_CHARS, context = 3 } = bounds;
  const a = linesOf(before);
  const b = linesOf(after);
  if (a.length > maxLines || b.length > maxLines) return { ok: false, reason: `more than ${maxLines} lines on a side` };
  const ops = editScript(a, b, maxEdits);
  if (!ops) return { ok: false, reason: `more than ${maxEdits} lines differ` };
  return render(ops, context, maxChars);
}

/** The shortest edit script from `a` to `b`, or undefined when it needs more than `maxEdits` edits. */
function editScript(a: string[], b: string[], maxEdits: number): Op[] | undefined {
  // A common prefix and suffix cost nothing to find and shrink the search to what changed.
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const ids = new Map<string, number>();
  const intern = (lines: string[]) =>
    Int32Array.from(lines, (l) => {
      let id = ids.get(l);
      if (id === undefined) ids.set(l, (id = ids.size));
      return id;
    });
  const x = intern(a.slice(head, a.length - tail));
  const y = intern(b.slice(head, b.length - tail));
  const middle = myers(x, y, maxEdits);
  if (!middle) return undefined;
  const kept = (lines: string[]): Op[] => lines.map((line) => ({ tag: ' ', line }));
  return [
    ...kept(a.slice(0, head)),
    ...middle.map(({ tag, index }) => ({ tag, line: tag === '+' ? b[head + index]! : a[head + index]! })),
    ...kept(a.slice(a.length - tail)),
  ];
}

/**
 * Myers' O((N+M)·D) greedy search (1986), keeping each round's frontier (2d+3 entries, so memory is O(D²) for D
 * edits) to walk back the path. Indexes are into `a` for kept and removed lines, into `b` for added ones.
 */
function myers(a: Int32Array, b: Int32Array, maxEdits: number): { tag: Op['tag']; index: number }[] | undefined {
  const n = a.length;
  const m = b.length;
  const limit = Math.min(n + m, maxEdits);
  const offset = limit + 1;
  const v = new Int32Array(2 * limit + 3);
  const trace: Int32Array[] = [];
  let found = -1;
  for (let d = 0; d <= limit && found < 0; d++) {
    // The frontier as this round starts: round d reads k-1 and k+1 for k in -d..d.
    trace.push(v.slice(offset - d - 1, offset + d + 2));
    for (let k = -d; k <= d; k += 2) {
      let x =
        k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!) ? v[offset + k + 1]! : v[offset + k - 1]! + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) {
        found = d;
        break;
      }
    }
  }
  if (found < 0) return undefined;
  const out: { tag: Op['tag']; index: number }[] = [];
  let x = n;
  let y = m;
  for (let d = found; d >= 0; d--) {
    const frontier = trace[d]!;
    const at = (k: number) => frontier[k + d + 1]!;
    const k = x - y;
    const prevK = k === -d || (k !== d && at(k - 1) < at(k + 1)) ? k + 1 : k - 1;
    const prevX = d === 0 ? 0 : at(prevK);
    const prevY = d === 0 ? 0 : prevX - prevK;
    while (x > prevX && y > prevY) {
      x--;
      y--;
      out.push({ tag: ' ', index: x });
    }
    if (d > 0) {
      if (x === prevX) out.push({ tag: '+', index: prevY });
      else out.push({ tag: '-', index: prevX });
    }
    x = prevX;
    y = prevY;
  }
  return out.reverse();
}

/** The hunks of an edit script with `context` kept lines around each change, cut at a line to `maxChars`. */
function render(ops: Op[], context: number, maxChars: number): DiffResult {
  const changes = ops.flatMap((op, i) => (op.tag === ' ' ? [] : [i]));
  const added = ops.filter((op) => op.tag === '+').length;
  const removed = ops.filter((op) => op.tag === '-').length;
  // Old and new line numbers before each op.
  const oldAt: number[] = [];
  const newAt: number[] = [];
  let o = 0;
  let w = 0;
  for (const op of ops) {
    oldAt.push(o);
    newAt.push(w);
    if (op.tag !== '+') o++;
    if (op.tag !== '-') w++;
  }
  const parts: string[] = [];
  let length = 0;
  let truncated = false;
  const emit = (text: string): boolean => {
    if (length + text.length > maxChars) return !(truncated = true);
    parts.push(text);
    length += text.length;
    return true;
  };
  for (let c = 0; c < changes.length && !truncated;) {
    const start = Math.max(0, changes[c]! - context);
    let last = changes[c]!;
    while (c + 1 < changes.length && changes[c + 1]! - last <= 2 * context) last = changes[++c]!;
    c++;
    const end = Math.min(ops.length, last + context + 1);
    const slice = ops.slice(start, end);
    const oldCount = slice.filter((op) => op.tag !== '+').length;
    const newCount = slice.filter((op) => op.tag !== '-').length;
    // An empty side names the line before the hunk (`-0,0` for an empty old file), as diff(1) does.
    const range = (at: number, count: number) => `${count === 0 ? at : at + 1},${count}`;
    if (!emit(`@@ -${range(oldAt[start]!, oldCount)} +${range(newAt[start]!, newCount)} @@\n`)) break;
    for (const op of slice) {
      const line = op.line.endsWith('\n') ? op.line : `${op.line}\n\\ No newline at end of file\n`;
      if (!emit(`${op.tag}${line}`)) break;
    }
  }
  return { ok: true, diff: parts.join(''), added, removed, truncated };
}
