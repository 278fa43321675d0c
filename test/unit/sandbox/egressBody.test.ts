// What the egress proxy scans of a plain-HTTP body: undone of its content encodings, bounded when it inflates.
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { decodeForScan, MAX_INFLATED_BODY_BYTES } from '../../../host/sandbox/egressBody.js';

const SECRET = 'sk-live-bodyscan-0123456789';

describe('decodeForScan', () => {
  it('undoes gzip, deflate and br, several in the order applied (the last listed first)', () => {
    const plain = Buffer.from(`token=${SECRET}`);
    const read = (raw: Buffer, coding: string | undefined) => (decodeForScan(raw, coding) as { text: string }).text;
    expect(read(plain, undefined)).toBe(`token=${SECRET}`);
    expect(read(gzipSync(plain), 'gzip')).toContain(`token=${SECRET}`);
    expect(read(deflateSync(plain), 'Deflate')).toContain(`token=${SECRET}`);
    expect(read(brotliCompressSync(plain), 'br')).toContain(`token=${SECRET}`);
    expect(read(brotliCompressSync(gzipSync(plain)), 'gzip, br')).toContain(`token=${SECRET}`);
    expect(read(gzipSync(plain), 'identity, gzip')).toContain(`token=${SECRET}`);
  });

  it('reads the bytes as sent too; refuses bytes after a compressed stream (an attack hid a secret there)', () => {
    const tail = Buffer.from(`k=${SECRET}`);
    for (const [compress, coding] of [
      [deflateSync, 'deflate'],
      [brotliCompressSync, 'br'],
    ] as const)
      expect(decodeForScan(Buffer.concat([compress(Buffer.from('hi')), tail]), coding)).toEqual({
        refused: `the body has ${tail.length} bytes after its ${coding} stream`,
      });
    // gzip members one after another are one body (its decoder reads them all).
    const members = Buffer.concat([gzipSync('hi '), gzipSync(`k=${SECRET}`)]);
    expect((decodeForScan(members, 'gzip') as { text: string }).text).toContain(`hi k=${SECRET}`);
  });

  it('an ASCII secret among bytes that are no UTF-8 still reads as itself', () => {
    const raw = Buffer.concat([Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from(SECRET), Buffer.from([0x80])]);
    expect((decodeForScan(raw, undefined) as { text: string }).text).toContain(SECRET);
  });

  it('refuses what it cannot read: an unknown coding, a body that is not what it claims, one inflating too far', () => {
    expect(decodeForScan(Buffer.from('x'), 'zstd')).toEqual({ refused: 'content-encoding "zstd" cannot be scanned' });
    expect(decodeForScan(Buffer.from('not gzip'), 'gzip')).toMatchObject({
      refused: expect.stringMatching(/^the body does not decode as its content-encoding says/),
    });
    const bomb = gzipSync(Buffer.alloc(MAX_INFLATED_BODY_BYTES + 1));
    expect(bomb.length).toBeLessThan(100_000);
    expect(decodeForScan(bomb, 'gzip')).toMatchObject({ refused: expect.stringMatching(/does not decode/) });
  });
});
