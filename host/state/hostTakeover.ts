/** The reads and writes of taking over a dead host (docs/scale-out.md §4, "A dead host"; recovery/deadHosts.ts). */
import { dialectOf } from './db.js';
import { rowLock } from './dialectSql.js';
import { dbNowMs, type HostLease } from './hostLeases.js';
import { dbOf, type Store } from './store.js';

/**
 * The hosts whose lease ran out and that nobody took over yet, locked for the caller's transaction: on PostgreSQL
 * `FOR UPDATE`, which waits for the claims such a host has in flight (each holds its `hosts` row `FOR KEY SHARE`
 * without the writer lock, claims.ts) and makes its later claims wait for the takeover, then find it dead. Not
 * `SKIP LOCKED`: a host claiming back to back would be skipped at every try. Takers do not wait for each other: each
 * holds the writer lock (stage 1). Call inside a transaction.
 */
export function lockExpiredHosts(store: Store): HostLease[] {
  const db = dbOf(store);
  const lock = rowLock(dialectOf(db), 'UPDATE');
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

/**
 * Make `to` the owner of `runIds` (a dead host's queued runs that never started: the session's queue carries on), its
 * host process being `process` (this one: the taking host's, so processes on its own data folder judge the run by a
 * live pid, claims.ts `ownerLive`).
 */
export function reownRuns(
  store: Store,
  runIds: readonly string[],
  to: HostLease,
  process: { pid: number; start: number | null },
): void {
  const update = dbOf(store).prepare(
    'UPDATE runs SET owner_host = ?, owner_epoch = ?, host_pid = ?, host_start = ? WHERE id = ?',
  );
  for (const id of runIds) update.run(to.hostId, to.epoch, process.pid, process.start, id);
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

/** A queued run re-owned by this host, as its dispatcher needs it to wait in its session's queue (adopt). */
export interface AdoptableRun {
  runId: string;
  sessionId: string;
  tenant: string;
  bindingId: string;
  goalRevision: number;
  /** The seq of its `run.queued` (its place in its session's queue). */
  queuedSeq: number;
  /**
   * The chat event as stored with `message.received`, right before the run's `run.queued`, redacted again by the
   * reading store: the host that stored it may have lacked a secret this one knows (outside attack 6, F2).
   */
  event: unknown;
}

/**
 * A run that is still queued, unclaimed and owned by `owner`, read back as its dispatch left it in the log; undefined
 * when it is not (started, ended, claimed, another owner's) or its queueing events are not the pair the journal writes.
 */
export function adoptableRun(store: Store, runId: string, owner: HostLease): AdoptableRun | undefined {
  const db = dbOf(store);
  const run = db
    .prepare(
      'SELECT r.session_id AS sessionId, r.binding_id AS bindingId, r.queued_seq AS queuedSeq, s.tenant AS tenant ' +
        "FROM runs r JOIN sessions s ON s.id = r.session_id WHERE r.id = ? AND r.status = 'queued' " +
        'AND r.owner_host = ? AND r.owner_epoch = ? AND NOT EXISTS (SELECT 1 FROM run_claims c WHERE c.run_id = r.id)',
    )
    .get(runId, owner.hostId, owner.epoch) as
    { sessionId: string; bindingId: string | null; queuedSeq: number | null; tenant: string } | undefined;
  if (!run || run.bindingId === null || run.queuedSeq === null) return undefined;
  const rows = db
    .prepare('SELECT seq, type, run_id AS runId, data FROM events WHERE session_id = ? AND seq IN (?, ?) ORDER BY seq')
    .all(run.sessionId, Number(run.queuedSeq) - 1, Number(run.queuedSeq)) as {
    seq: number;
    type: string;
    runId: string | null;
    data: string;
  }[];
  const [received, queued] = rows;
  if (received?.type !== 'message.received' || queued?.type !== 'run.queued' || queued.runId !== runId)
    return undefined;
  const { goalRevision } = JSON.parse(queued.data) as { goalRevision?: number };
  return {
    runId,
    sessionId: run.sessionId,
    tenant: run.tenant,
    bindingId: run.bindingId,
    goalRevision: goalRevision ?? 0,
    queuedSeq: Number(run.queuedSeq),
    event: store.redacted((JSON.parse(received.data) as { event: unknown }).event),
  };
}
