/** Default time slice of {@link PumpScheduler}: the longest one turn of stream reads may hold the event loop. */
export const DEFAULT_SLICE_MS = 8;

/**
 * Runs the read-and-write steps ("pumps") of every stream of a server in one round-robin queue, a time slice per
 * event-loop turn: when the slice is spent, the rest waits for the next turn (setImmediate), so the I/O of every
 * other request — /healthz among them — is served in between. Without it each stream scheduled its own
 * setImmediate, and Node runs every immediate queued before a turn in that turn: 40 catch-ups of 500 events each
 * held the loop for one whole round (docs/benchmarks.md, "/healthz during SSE catch-ups").
 */
export class PumpScheduler {
  // A Set keeps insertion order and drops a second request of a pump already waiting (wakes coalesce).
  private readonly queue = new Set<() => void>();
  private running = false;

  constructor(
    private readonly sliceMs = DEFAULT_SLICE_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Run `pump` in a coming turn (once, however often it is asked for before it runs). */
  schedule(pump: () => void): void {
    this.queue.add(pump);
    if (!this.running) {
      this.running = true;
      setImmediate(() => this.turn());
    }
  }

  /** Forget `pump` (its stream ended). */
  cancel(pump: () => void): void {
    this.queue.delete(pump);
  }

  /** Pumps waiting now (tests). */
  get waiting(): number {
    return this.queue.size;
  }

  private turn(): void {
    const deadline = this.now() + this.sliceMs;
    // A pump that asks again while the slice runs goes to the back of the queue: streams take turns fairly.
    while (this.queue.size > 0) {
      const pump = this.queue.values().next().value!;
      this.queue.delete(pump);
      try {
        pump();
      } catch {
        // A pump handles its own errors (it ends its stream); one that throws must not stop the others.
      }
      if (this.now() >= deadline) break;
    }
    if (this.queue.size > 0) setImmediate(() => this.turn());
    else this.running = false;
  }
}
