/** Queued runs moved between live hosts: balancing (docs/scale-out.md §4, "Balancing"; decision CL15). */
import { dialectOf } from './db.js';
import { dbNowMs, type HostLease } from './hostLeases.js';
import { reownRuns } from './hostTakeover.js';
import { dbOf, type Store } from './store.js';

/** A queued run another host owned and this one owns now. */
export interface MovedRun {
  runId: string;
  sessionId: string;
  from: HostLease;
}

/** Which runs {@link moveWaitingRuns} may take, and how many. */
export interface MoveRequest {
  /** At most this many (the taking host's free slots). */
  limit: number;
  /** Only runs queued at least this long ago (by this host's clock): their owner had time to claim them. */
  waitedMs: number;
  /**
   * The `maxConcurrentRuns` of a binding as this host knows it, or undefined when this host cannot run it (unknown,
   * disabled): a run whose binding has no free slot waits for that slot wherever it is, so it is not moved.
   */
  bindingSlots: (bindingId: string) => number | undefined;
  /** The taking host's process (the moved runs' owner process, as a takeover's re-owned runs). */
  process: { pid: number; start: number | null };
  /** Only these runs (those the taking host found it can plan: {@link runsToMove}); any when absent. */
  only?: ReadonlySet<string>;
}

/** A run {@link runsToMove} found movable, with the host that owns it now. */
export interface MovableRun {
  runId: string;
  owner: HostLease;
}

/**
 * What {@link moveWaitingRuns} would consider now, read without a lock (a few more than `limit`): the taking host
 * checks each (can it plan the run here?) before it moves any, outside the writer lock. The move checks all again.
 */
export function runsToMove(
  store: Store,
  to: HostLease,
  request: Pick<MoveRequest, 'limit' | 'waitedMs'>,
): MovableRun[] {
  const db = dbOf(store);
  if (dialectOf(db) !== 'postgres' || request.limit <= 0) return [];
  const { from, waiting } = movableSql(store);
  const rows = db
    .prepare(
      'SELECT r.id AS runId, r.owner_host AS hostId, r.owner_epoch AS epoch ' +
        `${from} WHERE ${waiting} ORDER BY r.queued_at, r.id LIMIT ?`,
    )
    .all(to.hostId, queuedBefore(request.waitedMs), request.limit * 4) as {
    runId: string;
    hostId: string;
    epoch: number | string;
  }[];
  return rows.map((r) => ({ runId: r.runId, owner: { hostId: r.hostId, epoch: Number(r.epoch) } }));
}

/** The queued-at bound of a run that waited `waitedMs` (by this host's clock). */
const queuedBefore = (waitedMs: number) => new Date(Date.now() - waitedMs).toISOString();

/**
 * The tables and the condition of a movable run `r` (parameters: the taking host's id, the queued-at bound). Who may
 * give a run away: a live host that is running something (it holds a claim): one that runs nothing has a free slot,
 * and its waiting run waits for something else (a host that just took runs and is claiming them, say).
 */
function movableSql(store: Store): { from: string; waiting: string } {
  const db = dbOf(store);
  return {
    from:
      'FROM runs r JOIN hosts h ON h.host_id = r.owner_host AND h.epoch = r.owner_epoch ' +
      'JOIN sessions s ON s.id = r.session_id',
    waiting:
      "r.status = 'queued' AND r.owner_host <> ? AND r.binding_id IS NOT NULL AND r.queued_at < ? " +
      `AND h.dead_at IS NULL AND h.lease_until > ${dbNowMs(db)} AND s.paused_reason IS NULL ` +
      'AND EXISTS (SELECT 1 FROM run_claims oc JOIN runs o ON o.id = oc.run_id WHERE o.owner_host = r.owner_host) ' +
      'AND NOT EXISTS (SELECT 1 FROM run_claims c WHERE c.session_id = r.session_id) ' +
      "AND NOT EXISTS (SELECT 1 FROM runs e WHERE e.session_id = r.session_id AND e.status = 'queued' " +
      'AND e.queued_seq < r.queued_seq)',
  };
}

/**
 * Move to `to` up to `limit` runs that another live host queued and cannot start for want of its own slots: queued,
 * unclaimed, the earliest waiting run of a session that has no claimed run and is not paused, waited `waitedMs`, of a
 * binding with a free slot in the cluster, and of a host that runs something (holds a claim). In one writer-lock
 * transaction with a `cluster.runs_moved` audit record.
 *
 * The candidates are locked `FOR UPDATE OF r SKIP LOCKED`: a run whose owner is claiming it this moment (a claim
 * locks the run's row without the writer lock, claims.ts) is skipped, not waited for — this transaction holds the
 * writer lock, and waiting would hold every write of the cluster behind that claim. Each locked candidate is then read
 * again (below). A claim that comes after the move waits for this transaction, then finds the run another host's (the
 * fence refuses it: the owner hands the run over). PostgreSQL only: on SQLite runs have no owner host (one host per
 * data folder), and nothing is moved.
 */
export function moveWaitingRuns(store: Store, to: HostLease, request: MoveRequest): MovedRun[] {
  const db = dbOf(store);
  if (dialectOf(db) !== 'postgres' || request.limit <= 0) return [];
  const before = queuedBefore(request.waitedMs);
  const { from, waiting } = movableSql(store);
  return store.transaction(() => {
    const locked = db
      .prepare(`SELECT r.id ${from} WHERE ${waiting} ORDER BY r.queued_at, r.id LIMIT ? FOR UPDATE OF r SKIP LOCKED`)
      // A few more than the limit: some may be of a binding with no free slot.
      .pluck()
      .all(to.hostId, before, request.limit * 4) as string[];
    // Read again, in a statement of its own: a claim that committed after the first statement began, and released the
    // run's row before this transaction locked it, changed no column of that row, so the lock saw nothing and the
    // first statement's snapshot still showed the run unclaimed. With the row locked now, no claim of it can commit.
    const still = db.prepare(
      'SELECT r.id AS runId, r.session_id AS sessionId, r.binding_id AS bindingId, r.owner_host AS hostId, ' +
        `r.owner_epoch AS epoch ${from} WHERE ${waiting} AND r.id = ?`,
    );
    const candidates = locked.flatMap((id) => {
      const row = still.get(to.hostId, before, id) as
        { runId: string; sessionId: string; bindingId: string; hostId: string; epoch: number | string } | undefined;
      return row ? [row] : [];
    });
    const claimsOf = db.prepare('SELECT count(*) FROM run_claims WHERE binding_id = ?').pluck();
    const moving = new Map<string, number>();
    const moved: MovedRun[] = [];
    for (const c of candidates) {
      if (moved.length >= request.limit) break;
      if (request.only && !request.only.has(c.runId)) continue;
      const slots = request.bindingSlots(c.bindingId);
      const taken = (claimsOf.get(c.bindingId) as number) + (moving.get(c.bindingId) ?? 0);
      if (slots === undefined || taken >= slots) continue;
      moving.set(c.bindingId, (moving.get(c.bindingId) ?? 0) + 1);
      moved.push({ runId: c.runId, sessionId: c.sessionId, from: { hostId: c.hostId, epoch: Number(c.epoch) } });
    }
    if (moved.length === 0) return moved;
    reownRuns(
      store,
      moved.map((m) => m.runId),
      to,
      request.process,
    );
    store.audit.append({
      type: 'cluster.runs_moved',
      actor: 'host',
      data: { to, runs: moved.map((m) => ({ runId: m.runId, from: m.from })) },
    });
    return moved;
  });
}
