import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { REDACTED, Redactor } from '../../../host/secrets/redactor.js';

describe('redactor', () => {
  it('removes a registered secret in every written form, and generic credential shapes', () => {
    const r = new Redactor();
    r.add('s3cr3t"value\\x');
    r.add('short'); // too short to register
    const b64 = Buffer.from('s3cr3t"value\\x').toString('base64');
    expect(r.text('a s3cr3t"value\\x b')).toBe(`a ${REDACTED} b`);
    expect(r.text(JSON.stringify({ k: 's3cr3t"value\\x' }))).toBe(`{"k":"${REDACTED}"}`);
    expect(r.text(`basic ${b64}`)).toBe(`basic ${REDACTED}`);
    expect(r.text('short stays')).toBe('short stays');
    expect(r.text('key sk-ant-api03-abcdefghijklmnopqrstuv and ghp_abcdefghijklmnopqrstuvwxyz0123')).toBe(`key ${REDACTED} and ${REDACTED}`);
    expect(r.value({ a: ['s3cr3t"value\\x', 1], b: null })).toEqual({ a: [REDACTED, 1], b: null });
  });

  it('catches a secret split across stream chunks at any cut (property)', () => {
    const secret = 'canary-7f3e9a1b2c4d';
    const r = new Redactor();
    r.add(secret);
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), fc.string({ maxLength: 300 }), fc.array(fc.integer({ min: 1, max: 50 }), { maxLength: 30 }), (before, after, cuts) => {
        const text = `${before}${secret}${after}`;
        const stream = r.stream();
        let out = '';
        let i = 0;
        for (const n of cuts) {
          out += stream.push(text.slice(i, i + n));
          i += n;
        }
        out += stream.push(text.slice(i)) + stream.end();
        expect(out).not.toContain(secret);
        expect(out).toContain(REDACTED);
      }),
      { numRuns: 300 },
    );
  });
});
