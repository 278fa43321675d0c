/**
 * The per-token request rate of `paddock serve` (docs/http-api.md, "Tokens, tenants, roles"): a token bucket per
 * token id, in this process's memory (a limit per server process, as documented).
 */

import { ApiProblem } from './problems.js';

/** Rate and burst of every token's bucket. */
export interface RateLimitOptions {
  /** Requests per second refilled. */
  rate: number;
  /** Bucket size: how many requests may come at once. */
  burst: number;
}

/** The defaults of `serve --rate` and `--burst`. */
export const RATE_LIMIT_DEFAULTS: RateLimitOptions = { rate: 20, burst: 40 };

/** Buckets untouched this long are full again and dropped, so memory is bounded by the tokens in use. */
const IDLE_DROP_MS = 60_000;

/** Token buckets keyed by token id. `now` is injectable so unit tests need no clock. */
export class TokenBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private lastSweep = 0;

  constructor(
    private readonly options: RateLimitOptions,
    private readonly now: () => number = () => performance.now(),
  ) {
    if (!(options.rate > 0) || !(options.burst >= 1)) throw new RangeError('rate must be > 0 and burst ≥ 1');
  }

  /** Take one request for `key`: `{ ok: true }`, or the whole seconds until one is available. */
  take(key: string): { ok: true } | { ok: false; retryAfterSeconds: number } {
    const now = this.now();
    this.sweep(now);
    const { rate, burst } = this.options;
    const bucket = this.buckets.get(key) ?? { tokens: burst, at: now };
    bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.at) / 1000) * rate);
    bucket.at = now;
    this.buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { ok: true };
    }
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / rate)) };
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < IDLE_DROP_MS) return;
    this.lastSweep = now;
    for (const [key, b] of this.buckets) if (now - b.at > IDLE_DROP_MS) this.buckets.delete(key);
  }
}

/**
 * Take one request for `key` from `buckets`, or throw 429 `rate_limited`: `what` names the limit (the detail goes on
 * with "; retry in N s"), `extra` is added to the problem (e.g. `scope`), `Retry-After` is set.
 */
export function takeOrRefuse(
  buckets: TokenBuckets,
  key: string,
  what: string,
  extra: Record<string, unknown> = {},
): void {
  const taken = buckets.take(key);
  if (!taken.ok)
    throw new ApiProblem(429, 'rate_limited', `${what}; retry in ${taken.retryAfterSeconds} s`, extra, {
      'retry-after': String(taken.retryAfterSeconds),
    });
}
