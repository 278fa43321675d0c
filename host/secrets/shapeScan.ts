import { SECRET_SHAPES } from './inlineSecrets.js';
import type { Span } from './formIndex.js';

/**
 * The shapes (inlineSecrets.ts), each as a sticky pattern tried where its head matched (for the URL password, at the
 * scheme before each `://`) and a global one for a shape without a head of its own. Two are adjusted for text that is
 * not a whole value: the URL password may start anywhere its scheme
 * does (not only at `^`), and a JWT may not start inside a run of its own characters (else a long run of `-eyJ…`
 * costs quadratic time).
 */
const SHAPES = SECRET_SHAPES.map(({ pattern }) => {
  let source = pattern.source;
  if (source.startsWith('^')) source = `(?<![A-Za-z0-9+.-])${source.slice(1)}`;
  if (source.startsWith('\\beyJ')) source = `(?<![A-Za-z0-9_-])${source.slice(2)}`;
  const flags = pattern.flags.replace(/[gy]/g, '');
  const head = pattern.source.startsWith('^') ? '' : headOf(pattern.source);
  return {
    sticky: new RegExp(source, `${flags}y`),
    global: new RegExp(source, `${flags}g`),
    head: flags.includes('i') ? bothCases(head) : head,
  };
});

/** Index of the URL-password shape, found from `://` instead of a head. */
const URL_SHAPE = SECRET_SHAPES.findIndex(({ pattern }) => pattern.source.startsWith('^'));

/**
 * Every shape's head in one pattern, each alternative a group: one pass of the regular-expression engine finds where
 * any shape may start and which (heads are short, so looking again one character after each costs little).
 */
const HEADS = new RegExp(
  SHAPES.filter(({ head }) => head !== '')
    .map(({ head }) => `(${head})`)
    .join('|'),
  'g',
);
/** The shape behind each group of {@link HEADS}. */
const HEAD_SHAPE = SHAPES.flatMap(({ head }, i) => (head !== '' ? [i] : []));

/**
 * The start every match of a pattern has: its leading atoms (literal characters, escapes such as `\b`, character
 * classes) up to the first one with a quantifier or a group, alternation, anchor or wildcard. `\bsk-` for
 * `\bsk-[A-Za-z0-9_-]{16,}`, `-----BEGIN ` for `-----BEGIN [A-Z ]*PRIVATE KEY-----`.
 */
export function headOf(source: string): string {
  let head = '';
  for (let i = 0; i < source.length;) {
    let end = i + 1;
    if (source[i] === '\\') end = i + 2;
    else if (source[i] === '[') end = source.indexOf(']', i) + 1;
    else if ('(|^$.'.includes(source[i]!)) break;
    if ('{*+?'.includes(source[end] ?? '')) break;
    head += source.slice(i, end);
    i = end;
  }
  // A head that is only assertions finds nothing cheaply: the shape then runs over the whole text.
  return head.replace(/\\b/g, '').length >= 2 ? head : '';
}

/** `source` with each letter outside a character class and not escaped written as `[xX]` (a case-insensitive head). */
function bothCases(source: string): string {
  let out = '';
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    if (c === '\\') {
      out += c + source[++i]!;
      continue;
    }
    if (c === '[') inClass = true;
    else if (c === ']') inClass = false;
    const lower = c.toLowerCase();
    const upper = c.toUpperCase();
    out += !inClass && lower !== upper ? `[${lower}${upper}]` : c;
  }
  return out;
}

/**
 * Add the range of every credential shape in `text`, exactly as each shape's own global scan finds them (leftmost
 * first, the next one looked for after the end of the last): one pass over the text for all the heads, then each
 * shape's pattern anchored at its heads in order, skipping heads inside its own last match.
 */
export function scanShapes(text: string, into: Span[]): void {
  const free = new Array<number>(SHAPES.length).fill(0);
  HEADS.lastIndex = 0;
  for (let m = HEADS.exec(text); m; m = HEADS.exec(text)) {
    let group = 1;
    while (m[group] === undefined) group++;
    const shape = HEAD_SHAPE[group - 1]!;
    if (m.index >= free[shape]!) free[shape] = tryAt(SHAPES[shape]!.sticky, text, m.index, into) ?? free[shape]!;
    HEADS.lastIndex = m.index + 1;
  }
  for (const [i, shape] of SHAPES.entries()) {
    if (shape.head !== '' || i === URL_SHAPE) continue;
    shape.global.lastIndex = 0;
    for (let m = shape.global.exec(text); m; m = shape.global.exec(text)) into.push([m.index, m.index + m[0].length]);
  }
  if (URL_SHAPE !== -1) scanSchemes(text, SHAPES[URL_SHAPE]!.sticky, into);
}

/** Add the match of a sticky pattern at `start`, if any; its end. */
function tryAt(sticky: RegExp, text: string, start: number, into: Span[]): number | undefined {
  sticky.lastIndex = start;
  const m = sticky.exec(text);
  if (!m) return undefined;
  into.push([start, start + m[0].length]);
  return start + m[0].length;
}

/** Whether the UTF-16 unit `c` may be part of a URL scheme (RFC 3986: letters, digits, `+`, `-`, `.`). */
function isSchemeChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 43 || c === 45 || c === 46;
}

/** Try the URL-password shape at the start of the scheme before each `://`. */
function scanSchemes(text: string, sticky: RegExp, into: Span[]): void {
  let floor = 0;
  for (let at = text.indexOf('://'); at !== -1; at = text.indexOf('://', at + 1)) {
    // The scheme is the whole run of scheme characters before `://` (the pattern's look-behind forbids a shorter one);
    // a run never crosses a `:`, so each character is walked over once.
    let start = at;
    while (start > floor && isSchemeChar(text.charCodeAt(start - 1))) start--;
    floor = at + 1;
    tryAt(sticky, text, start, into);
  }
}
