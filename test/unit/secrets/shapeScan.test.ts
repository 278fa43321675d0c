import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Span } from '../../../host/secrets/formIndex.js';
import { SECRET_SHAPES } from '../../../host/secrets/inlineSecrets.js';
import { scanShapes } from '../../../host/secrets/shapeScan.js';

/**
 * The reference, as the redactor scanned before issue 16: each shape's own pattern as a global scan, with the two
 * adjustments (the URL password may start anywhere its scheme does; a JWT not inside a run of its characters).
 */
function naive(text: string): Span[] {
  const out: Span[] = [];
  for (const { pattern } of SECRET_SHAPES) {
    let source = pattern.source;
    if (source.startsWith('^')) source = `(?<![A-Za-z0-9+.-])${source.slice(1)}`;
    if (source.startsWith('\\beyJ')) source = `(?<![A-Za-z0-9_-])${source.slice(2)}`;
    for (const m of text.matchAll(new RegExp(source, `${pattern.flags}g`))) out.push([m.index, m.index + m[0].length]);
  }
  return sorted(out);
}

const sorted = (spans: Span[]) => spans.sort((a, b) => a[0] - b[0] || a[1] - b[1]);

/** What the one pass finds in `text`, in order. */
function scanned(text: string): Span[] {
  const found: Span[] = [];
  scanShapes(text, found);
  return sorted(found);
}

/** Pieces that make shapes, near-shapes and their neighbours likely. */
const piece = fc.constantFrom(
  'sk-',
  'ghp_',
  'xoxb-',
  'AKIA',
  'AIza',
  '-----BEGIN RSA PRIVATE KEY-----',
  '-----BEGIN ',
  'eyJ',
  '.',
  'Bearer ',
  'bEaReR\t',
  'https://',
  'git+ssh://',
  'u:p@',
  ':',
  '@',
  '/',
  ' ',
  'A1b2C3d4E5f6G7h8',
  'ABCDEFGHIJKLMNOP',
  '_-',
  'x',
  'é',
);

describe('credential shapes in one pass', () => {
  it("finds exactly what each shape's own global scan finds (random shape-like text)", () => {
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 40 }), (pieces) => {
        const text = pieces.join('');
        expect(scanned(text)).toEqual(naive(text));
      }),
      { numRuns: 1000 },
    );
  });

  it('a shape inside another match is found (a bearer credential after an sk- run), and runs cost linear time', () => {
    const text = 'sk-abcdefghijklmnop-Bearer qrstuvwxyz0123456789 -----BEGIN RSA PRIVATE KEY-----';
    expect(scanned(text).map(([s, e]) => text.slice(s, e))).toEqual([
      'sk-abcdefghijklmnop-Bearer',
      'Bearer qrstuvwxyz0123456789',
      '-----BEGIN RSA PRIVATE KEY-----',
    ]);
    // Each of these would take minutes if every head started a scan to the end of its run.
    for (const run of ['sk-'.repeat(300_000), '-eyJ'.repeat(250_000), 'AKIA'.repeat(250_000), 'a://'.repeat(250_000)])
      expect(scanned(run)).toEqual(naive(run));
  });

  it('a case-insensitive shape matches in any case, a case-sensitive one only as written', () => {
    const found = (text: string) => scanned(text).map(([s, e]) => text.slice(s, e));
    expect(found('x BEARER abcdefghijklmnop0123 y')).toEqual(['BEARER abcdefghijklmnop0123']);
    expect(found('x HTTPS://user:pass@host/')).toEqual(['HTTPS://user:pass@']);
    expect(found('x SK-abcdefghijklmnop0123 y')).toEqual([]);
  });
});
