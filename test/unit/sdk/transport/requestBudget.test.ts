import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../../../sdk/protocol/errorCodes.js';
import { RequestBudget } from '../../../../sdk/transport/requestBudget.js';

describe('per-run request budget (fake clock)', () => {
  it('allows a burst of twice the rate, then refills at the rate; a refusal spends nothing', () => {
    let now = 0;
    const budget = new RequestBudget({ requestsPerSecond: 2, maxRequests: 100, maxRequestBytes: 100 }, () => now);
    expect([1, 2, 3, 4].map(() => budget.take(10))).toEqual([undefined, undefined, undefined, undefined]);
    const refused = budget.take(10)!;
    expect(refused.code).toBe(ErrorCodes.RateLimited);
    expect(refused.data).toMatchObject({ retryAfterMs: 500, deniedBy: 'limits.requestsPerSecond' });
    now = 499;
    expect(budget.take(10)?.code).toBe(ErrorCodes.RateLimited);
    now = 500;
    expect(budget.take(10)).toBeUndefined();
    now = 100_000; // a long pause refills to the burst, not beyond
    expect([1, 2, 3, 4, 5].map(() => budget.take(10)?.code)).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      ErrorCodes.RateLimited,
    ]);
  });

  it('caps the number of requests in a run and the size of each', () => {
    let now = 0;
    const budget = new RequestBudget({ requestsPerSecond: 1000, maxRequests: 3, maxRequestBytes: 100 }, () => now);
    expect(budget.take(101)).toMatchObject({ code: ErrorCodes.QuotaExceeded, data: { limit: 'maxRequestBytes' } });
    for (let i = 0; i < 3; i++) expect(budget.take(100)).toBeUndefined();
    now = 10_000;
    expect(budget.take(1)).toMatchObject({
      code: ErrorCodes.QuotaExceeded,
      data: { limit: 'maxRequests', deniedBy: 'limits.maxRequests' },
    });
  });
});
