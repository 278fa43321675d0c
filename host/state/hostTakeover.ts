/** The reads and writes of taking over a dead host (docs/scale-out.md §4, "A dead host"; recovery/deadHosts.ts). */
import { dialectOf } from './db.js';
import { dbNowMs, type HostLease } from './hostLeases.js';
import { dbOf, type Store } from './store.js';

/**
 * The hosts whose lease ran out and that nobody took over yet, locked for the caller's transaction: on PostgreSQL
 * `FOR UPDATE SKIP LOCKED`, so a host examining one is skipped, not waited for, by another (under the stage-1 writer
 * lock every write transaction runs alone anyway; the row lock is what stage 2 will rely on). Call inside a
 * transaction.
 */
export function lockExpiredHosts(store: Store): HostLease[] {
  const db = dbOf(store);
  const lock = dialectOf(db) === 'postgres' ? ' FOR UPDATE SKIP LOCKED' : '';
  return db
    .prepare(
      `SELECT host_id AS hostId, epoch FROM hosts WHERE dead_at IS NULL AND lease_until < ${dbNowMs(db)} ` +
        `ORDER BY host_id, epoch${lock}`,
    )
    .all() as HostLease[];
}

/** An open run of a host: whether it holds a claim (queued and claimed: about to start, perhaps with effects). */
export interface OwnedRun {
  id: string;
  sessionId: string;
  status: 'queued' | 'running';
  claimed: number;
}

/** The runs `host` owns that have not ended, in queue order. Call inside the taking-over transaction. */
export function openRunsOf(store: Store, host: HostLease): OwnedRun[] {
  return dbOf(store)
    .prepare(
      'SELECT r.id AS id, r.session_id AS sessionId, r.status AS status, ' +
        'CASE WHEN EXISTS (SELECT 1 FROM run_claims c WHERE c.run_id = r.id) THEN 1 ELSE 0 END AS claimed ' +
        "FROM runs r WHERE r.owner_host = ? AND r.owner_epoch = ? AND r.status IN ('queued', 'running') " +
        'ORDER BY r.session_id, r.queued_seq',
    )
    .all(host.hostId, host.epoch) as OwnedRun[];
}

/** Make `to` the owner of `runIds` (a dead host's queued runs that never started: the session's queue carries on). */
export function reownRuns(store: Store, runIds: readonly string[], to: HostLease): void {
  const update = dbOf(store).prepare('UPDATE runs SET owner_host = ?, owner_epoch = ? WHERE id = ?');
  for (const id of runIds) update.run(to.hostId, to.epoch, id);
}

/** Mark `host` dead, taken over by `by`: it renews nothing and writes nothing about its runs from now on. */
export function markHostDead(store: Store, host: HostLease, by: HostLease): void {
  dbOf(store)
    .prepare('UPDATE hosts SET dead_at = ?, taken_over_by = ? WHERE host_id = ? AND epoch = ? AND dead_at IS NULL')
    .run(new Date().toISOString(), `${by.hostId}/${by.epoch}`, host.hostId, host.epoch);
}

/** An `effect.intent` of a run with no result, reconciliation or resolution yet: its data as stored (JSON text). */
export function openIntentsOfRun(store: Store, runId: string): { sessionId: string; data: string }[] {
  // Read by the run (the events_by_run_except_updates index, migration 15) and matched here, in one pass: no JSON
  // function in SQL, so one statement serves both dialects.
  const rows = dbOf(store)
    .prepare(
      "SELECT session_id AS sessionId, type, data FROM events WHERE run_id = ? AND type <> 'run.update' AND type IN " +
        "('effect.intent', 'effect.result', 'effect.reconciled', 'effect.resolved') ORDER BY seq",
    )
    .all(runId) as { sessionId: string; type: string; data: string }[];
  const closed = new Set(
    rows.filter((r) => r.type !== 'effect.intent').map((r) => (JSON.parse(r.data) as { effectId: string }).effectId),
  );
  return rows
    .filter((r) => r.type === 'effect.intent' && !closed.has((JSON.parse(r.data) as { effectId: string }).effectId))
    .map(({ sessionId, data }) => ({ sessionId, data }));
}
