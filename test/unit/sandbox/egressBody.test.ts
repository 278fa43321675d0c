// What the egress proxy scans of a plain-HTTP body: undone of its content encodings, bounded when it inflates.
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { decodeForScan, MAX_INFLATED_BODY_BYTES } from '../../../host/sandbox/egressBody.js';

const SECRET = 'sk-live-bodyscan-0123456789';

describe('decodeForScan', () => {
  it('undoes gzip, deflate and br, several in the order applied (the last listed first)', () => {
    const plain = Buffer.from(`token=${SECRET}`);
    expect(decodeForScan(plain, undefined)).toEqual({ text: `token=${SECRET}` });
    expect(decodeForScan(gzipSync(plain), 'gzip')).toEqual({ text: `token=${SECRET}` });
    expect(decodeForScan(deflateSync(plain), 'Deflate')).toEqual({ text: `token=${SECRET}` });
    expect(decodeForScan(brotliCompressSync(plain), 'br')).toEqual({ text: `token=${SECRET}` });
    expect(decodeForScan(brotliCompressSync(gzipSync(plain)), 'gzip, br')).toEqual({ text: `token=${SECRET}` });
    expect(decodeForScan(gzipSync(plain), 'identity, gzip')).toEqual({ text: `token=${SECRET}` });
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
