import type { Store } from '../state/store.js';

/** A request to stop a run, written by whoever asked (CLI, API) for whichever host process owns it. */
export interface RunControl {
  seq: number;
  runId: string;
  action: 'cancel';
  reason: string;
  by: string;
}

/** Ask the owner of `runIds` to cancel them; audited. Returns how many requests were written. */
export function requestCancel(store: Store, runIds: readonly string[], reason: string, by: string): number {
  if (runIds.length === 0) return 0;
  const at = new Date().toISOString();
  store.transaction(() => {
    const insert = store.db.prepare("INSERT INTO run_controls (run_id, action, reason, by, at) VALUES (?, 'cancel', ?, ?, ?)");
    for (const runId of runIds) {
      insert.run(runId, reason, by, at);
      store.audit.append({ type: 'run.cancel_requested', actor: by, runId, data: { reason } }, at);
    }
  });
  return runIds.length;
}

/**
 * Watches `run_controls` for requests another connection wrote. It polls SQLite's
 * `data_version` (which changes only when another connection commits), so an idle check is one
 * pragma; it polls only while `hasWork()` is true and never keeps the process alive.
 */
export class RunControlWatcher {
  private lastSeq: number;
  private lastVersion: number;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: Store,
    private readonly onControl: (control: RunControl) => void,
    private readonly intervalMs = 200,
  ) {
    this.lastSeq = store.db.prepare('SELECT coalesce(max(seq), 0) FROM run_controls').pluck().get() as number;
    this.lastVersion = this.dataVersion();
  }

  /** Start polling (idempotent). */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.poll(), this.intervalMs);
    this.timer.unref();
  }

  /** Stop polling. */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Check once now. */
  poll(): void {
    const version = this.dataVersion();
    if (version === this.lastVersion) return;
    this.lastVersion = version;
    const rows = this.store.db.prepare('SELECT seq, run_id AS runId, action, reason, by FROM run_controls WHERE seq > ? ORDER BY seq').all(this.lastSeq) as RunControl[];
    for (const row of rows) {
      this.lastSeq = row.seq;
      this.onControl(row);
    }
  }

  private dataVersion(): number {
    return this.store.db.pragma('data_version', { simple: true }) as number;
  }
}
