import { describe, expect, it } from 'vitest';
import { bearerOf, unauthorized } from '../../../host/api/auth.js';
import { TokenBuckets } from '../../../host/api/rateLimit.js';

describe('bearer tokens', () => {
  it('takes the credential of a Bearer header and tells missing from malformed', () => {
    expect(bearerOf(undefined)).toEqual({ refusal: 'missing' });
    expect(bearerOf('')).toEqual({ refusal: 'missing' });
    expect(bearerOf('Bearer pdk_x')).toEqual({ token: 'pdk_x' });
    expect(bearerOf('bearer  pdk_x ')).toEqual({ token: 'pdk_x' });
    for (const bad of ['Basic abc', 'Bearer', 'Bearer a b', 'pdk_x', 'Bearer\tx'])
      expect([bad, bearerOf(bad)]).toEqual([bad, { refusal: 'malformed' }]);
    expect(bearerOf(['Bearer a', 'Bearer b'])).toEqual({ refusal: 'malformed' });
  });

  it('a 401 says which refusal (unknown and malformed are both "invalid") and asks for Bearer', () => {
    for (const [refusal, reason] of [
      ['missing', 'missing'],
      ['malformed', 'invalid'],
      ['unknown', 'invalid'],
      ['expired', 'expired'],
      ['revoked', 'revoked'],
    ] as const) {
      const p = unauthorized(refusal);
      expect([p.status, p.code, p.extra.reason, p.headers['www-authenticate']]).toEqual([
        401,
        'unauthorized',
        reason,
        'Bearer',
      ]);
    }
  });
});

describe('token buckets', () => {
  it('allows the burst, then the rate; says when to retry, rounded up to whole seconds', () => {
    let now = 0;
    const b = new TokenBuckets({ rate: 2, burst: 3 }, () => now);
    expect([b.take('t'), b.take('t'), b.take('t')].every((r) => r.ok)).toBe(true);
    expect(b.take('t')).toEqual({ ok: false, retryAfterSeconds: 1 });
    expect(b.take('other').ok).toBe(true); // per token
    now = 499;
    expect(b.take('t').ok).toBe(false);
    now = 500;
    expect(b.take('t').ok).toBe(true);
    expect(b.take('t').ok).toBe(false);
    const slow = new TokenBuckets({ rate: 0.1, burst: 1 }, () => now);
    expect(slow.take('s').ok).toBe(true);
    expect(slow.take('s')).toEqual({ ok: false, retryAfterSeconds: 10 });
  });

  it('refuses a nonsensical rate', () => {
    expect(() => new TokenBuckets({ rate: 0, burst: 1 })).toThrow(RangeError);
  });
});
