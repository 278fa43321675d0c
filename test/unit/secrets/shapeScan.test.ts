import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Span } from '../../../host/secrets/formIndex.js';
import { SECRET_SHAPES } from '../../../host/secrets/inlineSecrets.js';
import { scanShapes } from '../../../host/secrets/shapeScan.js';

/**
 * The reference: each shape's own pattern tried at every position (sticky), with the redactor's two adjustments (the
 * URL password may start anywhere its scheme does; a JWT not inside a run of its characters).
 */
function naive(text: string): Span[] {
  const out: Span[] = [];
  for (const { pattern } of SECRET_SHAPES) {
    let source = pattern.source;
    if (source.startsWith('^')) source = `(?<![A-Za-z0-9+.-])${source.slice(1)}`;
    if (source.startsWith('\\beyJ')) source = `(?<![A-Za-z0-9_-])${source.slice(2)}`;
    const sticky = new RegExp(source, `${pattern.flags}y`);
    for (let i = 0; i < text.length; i++) {
      sticky.lastIndex = i;
      const m = sticky.exec(text);
      if (m) out.push([i, i + m[0].length]);
    }
  }
  return out.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
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
  it('finds exactly the matches of every shape at every position (random shape-like text)', () => {
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 40 }), (pieces) => {
        const text = pieces.join('');
        const found: Span[] = [];
        scanShapes(text, found);
        expect(found.sort((a, b) => a[0] - b[0] || a[1] - b[1])).toEqual(naive(text));
      }),
      { numRuns: 1000 },
    );
  });

  it('a case-insensitive shape matches in any case, a case-sensitive one only as written', () => {
    const found = (text: string) => {
      const spans: Span[] = [];
      scanShapes(text, spans);
      return spans.map(([s, e]) => text.slice(s, e));
    };
    expect(found('x BEARER abcdefghijklmnop0123 y')).toEqual(['BEARER abcdefghijklmnop0123']);
    expect(found('x HTTPS://user:pass@host/')).toEqual(['HTTPS://user:pass@']);
    expect(found('x SK-abcdefghijklmnop0123 y')).toEqual([]);
  });
});
