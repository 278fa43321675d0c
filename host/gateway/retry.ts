/** Statuses worth another attempt: rate limited, server errors, Anthropic's 529 "overloaded". */
export const RETRYABLE_STATUS = new Set([408, 429, 500, 502, 503, 504, 529]);

/** Backoff settings (docs/gateway.md, "Retries and the circuit breaker"). */
export const RETRY = { baseMs: 250, capMs: 8_000, maxRetryAfterMs: 30_000 } as const;

/**
 * Milliseconds a `Retry-After` header asks for (delta seconds or an HTTP date), or undefined
 * when absent or unreadable.
 */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * How long to wait before retry number `attempt` (1-based): the server's `Retry-After` when it
 * gave one, else exponential backoff with full jitter. Undefined: do not retry (the server asked
 * for longer than we are willing to hold the harness).
 */
export function retryDelay(
  attempt: number,
  retryAfterMs: number | undefined,
  random: () => number = Math.random,
): number | undefined {
  if (retryAfterMs !== undefined) return retryAfterMs > RETRY.maxRetryAfterMs ? undefined : retryAfterMs;
  const ceiling = Math.min(RETRY.capMs, RETRY.baseMs * 2 ** (attempt - 1));
  return Math.floor(random() * ceiling);
}
