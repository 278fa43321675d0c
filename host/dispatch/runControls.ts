import type { Store } from '../state/store.js';
import { controlsAfter, insertCancels, lastControlSeq, type RunControl } from '../state/runControls.js';

export type { RunControl };

/** Ask the owner of `runIds` to cancel them; audited. Returns how many requests were written. */
export function requestCancel(store: Store, runIds: readonly string[], reason: string, by: string): number {
  if (runIds.length === 0) return 0;
  const at = new Date().toISOString();
  store.transaction(() => {
    insertCancels(store, runIds, reason, by, at);
    for (const runId of runIds) {
      store.audit.append({ type: 'run.cancel_requested', actor: by, runId, data: { reason } }, at);
    }
  });
  return runIds.length;
}

/**
 * Watches `run_controls` for requests another connection (process or host) wrote. It polls the store's "commits by
 * others" signal (topic `controls`: SQLite's `data_version`, which changes only when another connection commits, so
 * an idle check is one pragma; on PostgreSQL a count of notifications in memory, and a notification polls at once).
 * It watches only while started and never keeps the process alive.
 */
export class RunControlWatcher {
  private lastSeq: number;
  private lastVersion: number;
  private timer: NodeJS.Timeout | undefined;
  private unsignal: (() => void) | undefined;

  constructor(
    private readonly store: Store,
    private readonly onControl: (control: RunControl) => void,
    private readonly intervalMs = 200,
    /** Called after the requests, whenever another connection committed (the steering asks of `run_messages`). */
    private readonly onCommit: () => void = () => {},
  ) {
    this.lastSeq = lastControlSeq(store);
    this.lastVersion = this.signalVersion();
  }

  /** Start polling (idempotent). */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      try {
        this.poll();
      } catch {
        // A timer's throw would end the host: the store unreachable a moment is read again on the next tick.
      }
    }, this.intervalMs);
    this.timer.unref();
    this.unsignal = this.store.commits.onChange('controls', () => this.poll());
  }

  /** Stop polling. */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.unsignal?.();
    this.unsignal = undefined;
  }

  /** Check once now. */
  poll(): void {
    // The store closed under a watched run (a host shut down without draining): nothing is left to watch.
    if (this.store.isClosed) return this.stop();
    const version = this.signalVersion();
    if (version === this.lastVersion) return;
    const rows = controlsAfter(this.store, this.lastSeq);
    // Only once read: a read that failed (the store unreachable a moment) is tried again on the next tick.
    this.lastVersion = version;
    for (const row of rows) {
      this.lastSeq = row.seq;
      this.onControl(row);
    }
    this.onCommit();
  }

  private signalVersion(): number {
    return this.store.commits.version('controls');
  }
}
