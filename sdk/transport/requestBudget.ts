import { ErrorCodes } from '../protocol/errorCodes.js';
import { RpcError } from '../protocol/rpcError.js';

/** Per-run limits on runner → host requests. */
export interface RequestLimits {
  /** Sustained rate; bursts up to twice this many are allowed. */
  requestsPerSecond: number;
  /** Requests in the whole run. */
  maxRequests: number;
  /** Largest request line, in bytes. */
  maxRequestBytes: number;
}

/** Defaults when a run has no binding limits (e.g. the SDK's fake host). */
export const DEFAULT_REQUEST_LIMITS: RequestLimits = {
  requestsPerSecond: 50,
  maxRequests: 10_000,
  maxRequestBytes: 1024 * 1024,
};

/**
 * Counts one run's requests: a token bucket for the rate (capacity 2 × rate, refilled
 * continuously), a total count and a size cap. Refused requests do not spend a token.
 */
export class RequestBudget {
  private tokens: number;
  private last: number;
  private count = 0;

  constructor(
    private readonly limits: RequestLimits,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tokens = this.capacity;
    this.last = now();
  }

  private get capacity(): number {
    return Math.max(1, 2 * this.limits.requestsPerSecond);
  }

  /** Take one request of `bytes`; returns the refusal if it is over a limit. */
  take(bytes: number): RpcError | undefined {
    if (bytes > this.limits.maxRequestBytes) {
      return new RpcError(
        ErrorCodes.QuotaExceeded,
        `request of ${bytes} bytes is over the run's limit of ${this.limits.maxRequestBytes}`,
        {
          limit: 'maxRequestBytes',
          deniedBy: 'limits.maxRequestBytes',
        },
      );
    }
    if (this.count >= this.limits.maxRequests) {
      return new RpcError(
        ErrorCodes.QuotaExceeded,
        `the run already made ${this.limits.maxRequests} requests, its limit`,
        { limit: 'maxRequests', deniedBy: 'limits.maxRequests' },
      );
    }
    const now = this.now();
    this.tokens = Math.min(this.capacity, this.tokens + ((now - this.last) / 1000) * this.limits.requestsPerSecond);
    this.last = now;
    if (this.tokens < 1) {
      const retryAfterMs = Math.ceil(((1 - this.tokens) / this.limits.requestsPerSecond) * 1000);
      return new RpcError(ErrorCodes.RateLimited, `more than ${this.limits.requestsPerSecond} requests per second`, {
        retryAfterMs,
        deniedBy: 'limits.requestsPerSecond',
      });
    }
    this.tokens -= 1;
    this.count += 1;
    return undefined;
  }
}
