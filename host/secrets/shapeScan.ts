import { SECRET_SHAPES } from './inlineSecrets.js';
import type { Span } from './formIndex.js';

/** Characters of a URL scheme (RFC 3986), either case. */
const SCHEME_CHAR = /[A-Za-z0-9+.-]/;

/**
 * How to find one credential shape fast: a literal every match contains (case as written; absent, the pattern runs
 * over the whole text), and the pattern to run — globally when the literal is present, or, for the URL password,
 * anchored at each scheme that precedes a `://`.
 */
interface ShapeFinder {
  literal: string | undefined;
  pattern: RegExp;
  atScheme?: true;
}

/**
 * The credential shapes (inlineSecrets.ts), each with the literal its matches contain. Two patterns are adjusted for
 * text that is not a whole value: the URL-password shape may start anywhere (not only at `^`), and the JWT shape may
 * not start inside a run of its own characters (else a long run of `-eyJ…` costs quadratic time).
 */
const FINDERS: ShapeFinder[] = SECRET_SHAPES.map(({ pattern }) => {
  let source = pattern.source;
  const flags = pattern.flags.replace('g', '');
  if (source.startsWith('^'))
    // Found from each `://`: the match starts where the run of scheme characters before it starts.
    return { literal: '://', pattern: new RegExp(`(?<![A-Za-z0-9+.-])${source.slice(1)}`, `${flags}y`), atScheme: true };
  if (source.startsWith('\\beyJ')) source = `(?<![A-Za-z0-9_-])${source.slice(2)}`;
  return { literal: caseSensitiveLiteral(source, flags), pattern: new RegExp(source, `${flags}g`) };
});

/**
 * The literal a pattern's matches start with after an optional `\b` (its leading run of plain characters), when the
 * pattern is case-sensitive and the literal is at least two characters; otherwise none.
 */
function caseSensitiveLiteral(source: string, flags: string): string | undefined {
  if (flags.includes('i')) return undefined;
  const literal = /^(?:\\b|\(\?<!\[[^\]]*\]\))?([A-Za-z0-9 _-]+)/.exec(source)?.[1];
  return literal && literal.length >= 2 ? literal : undefined;
}

/**
 * Add the range of every credential shape in `text` (inlineSecrets.ts). A shape whose literal is absent costs one
 * native substring search; the URL-password shape, whose pattern would otherwise be tried at every position, is tried
 * only where a scheme precedes `://`.
 */
export function scanShapes(text: string, into: Span[]): void {
  for (const finder of FINDERS) {
    if (finder.literal !== undefined && !text.includes(finder.literal)) continue;
    if (finder.atScheme) scanSchemes(text, finder.pattern, into);
    else collect(finder.pattern, text, into);
  }
}

/** Run the sticky URL-password pattern at the start of the scheme before each `://`. */
function scanSchemes(text: string, sticky: RegExp, into: Span[]): void {
  let floor = 0;
  for (let at = text.indexOf('://'); at !== -1; at = text.indexOf('://', at + 1)) {
    // The scheme is the whole run of scheme characters before `://` (the pattern's look-behind forbids a longer one);
    // runs never cross a `:`, so each character is walked over once.
    let start = at;
    while (start > floor && SCHEME_CHAR.test(text[start - 1]!)) start--;
    floor = at + 3;
    sticky.lastIndex = start;
    const m = sticky.exec(text);
    if (m) into.push([start, start + m[0].length]);
  }
}

/**
 * Add the range of every match of a global pattern (an `exec` loop: far cheaper than `matchAll` on many short
 * strings).
 */
function collect(pattern: RegExp, text: string, into: Span[]): void {
  pattern.lastIndex = 0;
  for (let m = pattern.exec(text); m; m = pattern.exec(text)) into.push([m.index, m.index + m[0].length]);
}
