import { SECRET_SHAPES } from './inlineSecrets.js';
import type { Span } from './formIndex.js';

/**
 * The credential shapes (inlineSecrets.ts) that start with a literal, as one global pattern: one pass of the regular
 * expression engine over the text instead of one per shape. Each alternative keeps its own flags' meaning: a
 * case-insensitive shape has its letters (outside character classes) spelt in both cases. The JWT shape may not start
 * inside a run of its own characters (else a long run of `-eyJ…` costs quadratic time).
 */
const LITERAL_SHAPES = new RegExp(
  SECRET_SHAPES.filter(({ pattern }) => !pattern.source.startsWith('^'))
    .map(({ pattern }) => {
      let source = pattern.source;
      if (source.startsWith('\\beyJ')) source = `(?<![A-Za-z0-9_-])${source.slice(2)}`;
      return `(?:${pattern.flags.includes('i') ? bothCases(source) : source})`;
    })
    .join('|'),
  'g',
);

/**
 * The URL-password shape, anchored: tried only at the start of the scheme before each `://` (as a global pattern with
 * its look-behind it would be tried at every position of the text, the slowest of the shapes by far).
 */
const URL_PASSWORD = (() => {
  const shape = SECRET_SHAPES.find(({ pattern }) => pattern.source.startsWith('^'))!.pattern;
  return new RegExp(`(?<![A-Za-z0-9+.-])${shape.source.slice(1)}`, `${shape.flags.replace('g', '')}y`);
})();

/**
 * `source` with each letter outside a character class and not escaped written as `[xX]`. The classes of a
 * case-insensitive shape already list both cases (test/unit/secrets/shapeScan.test.ts compares the results).
 */
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
 * Add the range of every credential shape in `text`, starting at every position one starts (also inside another
 * match: a match there may reach further than the one around it).
 */
export function scanShapes(text: string, into: Span[]): void {
  const pattern = LITERAL_SHAPES;
  pattern.lastIndex = 0;
  for (let m = pattern.exec(text); m; m = pattern.exec(text)) {
    into.push([m.index, m.index + m[0].length]);
    pattern.lastIndex = m.index + 1;
  }
  scanSchemes(text, into);
}

/** Whether the UTF-16 unit `c` may be part of a URL scheme (RFC 3986: letters, digits, `+`, `-`, `.`). */
function isSchemeChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 43 || c === 45 || c === 46;
}

/** Try the URL-password shape at the start of the scheme before each `://`. */
function scanSchemes(text: string, into: Span[]): void {
  let floor = 0;
  for (let at = text.indexOf('://'); at !== -1; at = text.indexOf('://', at + 1)) {
    // The scheme is the whole run of scheme characters before `://` (the pattern's look-behind forbids a shorter one);
    // a run never crosses a `:`, so each character is walked over once.
    let start = at;
    while (start > floor && isSchemeChar(text.charCodeAt(start - 1))) start--;
    floor = at + 1;
    URL_PASSWORD.lastIndex = start;
    const m = URL_PASSWORD.exec(text);
    if (m) into.push([start, start + m[0].length]);
  }
}
