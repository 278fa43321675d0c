import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SECRET_SHAPES } from '../../../host/secrets/inlineSecrets.js';
import { REDACTED, Redactor } from '../../../host/secrets/redactor.js';
import { secretForms } from '../../../host/secrets/secretForms.js';

/** Push `text` through a fresh stream of `r` cut at the given sizes; what came out. */
function streamed(r: Redactor, text: string, cuts: number[]): string {
  const stream = r.stream();
  let out = '';
  let at = 0;
  for (const n of cuts) {
    out += stream.push(text.slice(at, at + n));
    at += n;
  }
  return out + stream.push(text.slice(at)) + stream.end();
}

/**
 * How a secret gets into text, each over the secret with random bytes around it (so base64 meets it at every
 * alignment): as is, JSON-escaped, URL-encoded, hex in either case, base64 (padded or not) and base64url.
 */
const WRITINGS: ((secret: string, before: Uint8Array, after: Uint8Array) => string)[] = [
  (s) => s,
  (s) => JSON.stringify({ k: s }),
  (s) => encodeURIComponent(s),
  (s, b, a) => Buffer.concat([b, Buffer.from(s), a]).toString('hex'),
  (s, b, a) =>
    Buffer.concat([b, Buffer.from(s), a])
      .toString('hex')
      .toUpperCase(),
  (s, b, a) => Buffer.concat([b, Buffer.from(s), a]).toString('base64'),
  (s, b, a) =>
    Buffer.concat([b, Buffer.from(s), a])
      .toString('base64')
      .replace(/=+$/, ''),
  (s, b, a) => Buffer.concat([b, Buffer.from(s), a]).toString('base64url'),
];

/** Secrets as they come: printable, any Unicode, JSON-special characters, and run tokens sharing their prefix. */
const secretArb = fc.oneof(
  fc.string({ minLength: 8, maxLength: 48 }),
  fc.string({ unit: 'grapheme', minLength: 8, maxLength: 24 }),
  fc.string({ unit: fc.constantFrom('"', '\\', '\n', 'a', 'é', '/', '+', '=', '%'), minLength: 8, maxLength: 24 }),
  fc.uint8Array({ minLength: 24, maxLength: 32 }).map((b) => `pdk_run_${Buffer.from(b).toString('base64url')}`),
);

/** Every form of every value that `out` still holds. */
function leaks(out: string, values: string[]): string[] {
  return values.flatMap((v) => secretForms(v)).filter((form) => out.includes(form));
}

describe('redaction, property-tested', () => {
  it('no form of a registered secret survives: secrets among many, any writing, offset and chunking', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(secretArb, { minLength: 1, maxLength: 40 }),
        fc.nat(),
        fc.integer({ min: 0, max: WRITINGS.length - 1 }),
        fc.uint8Array({ maxLength: 5 }),
        fc.uint8Array({ maxLength: 5 }),
        fc.string({ maxLength: 300 }),
        fc.string({ maxLength: 300 }),
        fc.array(fc.integer({ min: 1, max: 80 }), { maxLength: 20 }),
        (values, pick, writing, before, after, head, tail, cuts) => {
          // A marker's own characters could spell a form (a secret `REDACTED]…`): such secrets prove nothing.
          fc.pre(values.every((v) => !/[[\]]/.test(v) && !REDACTED.includes(v.slice(0, 8))));
          const r = new Redactor();
          for (const v of values) r.add(v);
          const secret = values[pick % values.length]!;
          const text = `${head}${WRITINGS[writing]!(secret, before, after)}${tail}`;
          for (const out of [r.text(text), streamed(r, text, cuts), JSON.stringify(r.value({ [text]: [text] }))])
            expect(leaks(out, values)).toEqual([]);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('text without a registered form or a credential shape comes out unchanged, whole or streamed', () => {
    const shapes = SECRET_SHAPES.map(({ pattern }) => new RegExp(pattern.source.replace(/^\^/, ''), pattern.flags));
    fc.assert(
      fc.property(
        fc.uniqueArray(secretArb, { minLength: 1, maxLength: 40 }),
        fc.oneof(
          fc.string({ maxLength: 2000 }),
          fc.string({ unit: 'grapheme', maxLength: 500 }),
          fc.uint8Array({ maxLength: 1500 }).map((b) => Buffer.from(b).toString('base64')),
          fc.uint8Array({ maxLength: 1000 }).map((b) => Buffer.from(b).toString('hex')),
          fc.uint8Array({ maxLength: 1000 }).map((b) => Buffer.from(b).toString('latin1')),
        ),
        fc.array(fc.integer({ min: 1, max: 300 }), { maxLength: 20 }),
        (values, text, cuts) => {
          fc.pre(leaks(text, values).length === 0 && !shapes.some((shape) => shape.test(text)));
          const r = new Redactor();
          for (const v of values) r.add(v);
          expect(r.text(text)).toBe(text);
          expect(streamed(r, text, cuts)).toBe(text);
          expect(r.watchKnown()(text)).toBe(false);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('forgetting one value leaves every other registered value, and a form two values share, redacted', () => {
    fc.assert(
      fc.property(fc.uniqueArray(secretArb, { minLength: 2, maxLength: 30 }), fc.nat(), (values, pick) => {
        fc.pre(values.every((v) => !/[[\]]/.test(v) && !REDACTED.includes(v.slice(0, 8))));
        const r = new Redactor();
        for (const v of values) r.add(v);
        const gone = values[pick % values.length]!;
        r.forget(gone);
        const kept = values.filter((v) => v !== gone);
        for (const v of kept) expect(leaks(r.text(`<${v}>`), kept)).toEqual([]);
        // A value whose form is one of the kept values' forms stays redacted through that value.
        const shared = secretForms(gone).filter((form) => kept.some((v) => secretForms(v).includes(form)));
        for (const form of shared) expect(r.text(form)).not.toContain(form);
      }),
      { numRuns: 200 },
    );
  });
});
