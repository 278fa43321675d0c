/** The `run_controls` table: cancel requests any process writes for whichever host process owns the run. */
import { dbOf, type Store } from './store.js';
import { notifyOthers } from './commitSignal.js';

/** A request to stop a run, written by whoever asked (CLI, API) for whichever host process owns it. */
export interface RunControl {
  seq: number;
  runId: string;
  action: 'cancel';
  reason: string;
  by: string;
}

/** Write one cancel request per run (call inside the transaction that audits them). */
export function insertCancels(store: Store, runIds: readonly string[], reason: string, by: string, at: string): void {
  const insert = dbOf(store).prepare(
    "INSERT INTO run_controls (run_id, action, reason, by, at) VALUES (?, 'cancel', ?, ?, ?)",
  );
  for (const runId of runIds) insert.run(runId, reason, by, at);
  // The owner, in another process or on another host, wakes at COMMIT (PostgreSQL; SQLite's polls data_version).
  notifyOthers(dbOf(store), 'controls');
}

/** The newest request's seq (0 when none). */
export function lastControlSeq(store: Store): number {
  return dbOf(store).prepare('SELECT coalesce(max(seq), 0) FROM run_controls').pluck().get() as number;
}

/** Requests after `seq`, oldest first. */
export function controlsAfter(store: Store, seq: number): RunControl[] {
  return dbOf(store)
    .prepare('SELECT seq, run_id AS runId, action, reason, by FROM run_controls WHERE seq > ? ORDER BY seq')
    .all(seq) as RunControl[];
}

/**
 * The first cancel request written for `runId`, if any: a host that takes a run on from another (a takeover, a move)
 * reads it, because its watcher may have passed that request before the run was its own.
 */
export function cancelRequestOf(store: Store, runId: string): RunControl | undefined {
  return dbOf(store)
    .prepare(
      "SELECT seq, run_id AS runId, action, reason, by FROM run_controls WHERE run_id = ? AND action = 'cancel' " +
        'ORDER BY seq LIMIT 1',
    )
    .get(runId) as RunControl | undefined;
}
