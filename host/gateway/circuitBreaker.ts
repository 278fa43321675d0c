/** Breaker settings (docs/gateway.md). */
export const BREAKER = { failureThreshold: 5, openMs: 30_000 } as const;

/** A breaker's state. */
export type BreakerState = 'closed' | 'open' | 'half-open';

/**
 * One provider endpoint's circuit breaker: opens after consecutive failed attempts, refuses
 * while open, then lets a single probe through; the probe's result closes or re-opens it.
 */
export class CircuitBreaker {
  private failures = 0;
  private openedAt = 0;
  private probing = false;
  private current: BreakerState = 'closed';

  constructor(
    private readonly onTransition: (from: BreakerState, to: BreakerState, failures: number) => void = () => {},
    private readonly settings: { failureThreshold: number; openMs: number } = BREAKER,
    private readonly now: () => number = Date.now,
  ) {}

  /** The state now (an open breaker past its open time reads as half-open). */
  get state(): BreakerState {
    if (this.current === 'open' && this.now() - this.openedAt >= this.settings.openMs) this.move('half-open');
    return this.current;
  }

  /** May an attempt go out now? In half-open, only one at a time (the probe). */
  tryAcquire(): boolean {
    const state = this.state;
    if (state === 'closed') return true;
    if (state === 'open' || this.probing) return false;
    this.probing = true;
    return true;
  }

  /** Milliseconds until an open breaker lets a probe through. */
  retryInMs(): number {
    return this.current === 'open' ? Math.max(0, this.settings.openMs - (this.now() - this.openedAt)) : 0;
  }

  /** The attempt got an answer that was not a retryable failure. */
  succeeded(): void {
    this.failures = 0;
    this.probing = false;
    if (this.current !== 'closed') this.move('closed');
  }

  /** The attempt failed (retryable status or no connection). */
  failed(): void {
    this.failures += 1;
    const wasProbe = this.probing;
    this.probing = false;
    if (wasProbe || (this.current === 'closed' && this.failures >= this.settings.failureThreshold)) {
      this.openedAt = this.now();
      this.move('open');
    }
  }

  /** The attempt was abandoned without an answer (the caller went away): free the probe slot. */
  released(): void {
    this.probing = false;
  }

  private move(to: BreakerState): void {
    const from = this.current;
    this.current = to;
    this.onTransition(from, to, this.failures);
  }
}
