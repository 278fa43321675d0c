import type { NewEvent, Store } from './store.js';

/**
 * Group commit: events queued in one event-loop turn are appended in one transaction, in the
 * order queued, and each `afterCommit` runs only once its event is durable. A runner streaming
 * thousands of updates a second costs one commit per turn instead of one per update.
 */
export class AppendBatcher {
  private queue: { sessionId: string; event: NewEvent; afterCommit?: () => void }[] = [];
  private scheduled = false;

  constructor(private readonly store: Store) {}

  /** Queue an event; it commits at the end of this turn (or at the next {@link flush}). */
  add(sessionId: string, event: NewEvent, afterCommit?: () => void): void {
    this.queue.push({ sessionId, event, afterCommit });
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /** Commit everything queued now, then run the callbacks in order. */
  flush(): void {
    this.scheduled = false;
    if (this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    this.store.transaction(() => {
      for (const item of batch) this.store.append(item.sessionId, [item.event]);
    });
    for (const item of batch) item.afterCommit?.();
  }
}
