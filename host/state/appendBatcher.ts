import type { StoredEvent } from './events.js';
import type { NewEvent, Store } from './store.js';

interface Queued {
  sessionId: string;
  event: NewEvent;
  afterCommit?: (stored: StoredEvent) => void;
}

/**
 * Group commit: events queued in one event-loop turn are appended in one transaction, in the
 * order queued, and each `afterCommit` runs only once its event is durable, with the event as
 * stored (its seq, its redacted data). A runner streaming thousands of updates a second costs one
 * commit per turn instead of one per update, and one `Store.appendMany` call (one seq look-up per
 * session, no savepoint per event) instead of one append each.
 *
 * A flush runs later than the `add` that queued it (from `setImmediate`), so it never throws:
 * an event that cannot be stored, or an `afterCommit` that throws, goes to `onError`, and the
 * rest of the batch is still committed (issue 11, item 5: one runner's odd data fails its run,
 * never the host).
 */
export class AppendBatcher {
  private queue: Queued[] = [];
  private scheduled = false;

  constructor(
    private readonly store: Store,
    private readonly onError: (error: unknown, event: NewEvent) => void,
  ) {}

  /** Queue an event; it commits at the end of this turn (or at the next {@link flush}). */
  add(sessionId: string, event: NewEvent, afterCommit?: (stored: StoredEvent) => void): void {
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
    let stored: (StoredEvent | undefined)[];
    try {
      stored = this.store.appendMany(batch);
    } catch {
      // The whole batch rolled back: commit the events one by one, so only the bad one is lost.
      stored = batch.map((item) => {
        try {
          return this.store.append(item.sessionId, [item.event])[0];
        } catch (error) {
          this.onError(error, item.event);
          return undefined;
        }
      });
    }
    for (let i = 0; i < batch.length; i++) {
      const item = batch[i]!;
      const event = stored[i];
      if (!event || !item.afterCommit) continue;
      try {
        item.afterCommit(event);
      } catch (error) {
        this.onError(error, item.event);
      }
    }
  }
}
