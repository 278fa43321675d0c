import { HostError } from '../errors.js';
import { pidScope } from '../util/pidScope.js';
import { processStartTime } from '../util/procIdentity.js';
import { dialectOf } from './db.js';
import { rowLock } from './dialectSql.js';
import { dbNowMs, existingHostId, startPidScope, type HostLease } from './hostLeases.js';
import { dbOf, type Store } from './store.js';

/** What a run needs to start: its session, its binding's slot limit and the host-wide one. */
export interface ClaimRequest {
  runId: string;
  sessionId: string;
  bindingId: string;
  /** The binding's `limits.maxConcurrentRuns`. */
  maxPerBinding: number;
  /**
   * The host's `maxConcurrentRuns`: counted over every process on this data folder, and on a store shared by several
   * hosts over the claims of this host's runs only ({@link hostRunsCondition}); the binding's limit is cluster-wide.
   */
  maxTotal: number;
}

/** Why a run may not start yet. */
export interface ClaimBlocker {
  /**
   * `session`: an earlier run of the session is claimed or still waiting; `binding` / `host`: no slot (`host` also
   * while this host's lease may have run out: it starts nothing until a renewal).
   */
  by: 'session' | 'binding' | 'host';
  /** Some of what blocks belongs to host processes that are gone: recovery frees it (then try again). */
  deadOwners: boolean;
}

/**
 * The result of {@link tryClaim}. `moved`: the run is another live host's now (balancing moved it there, runMoves.ts)
 * — it is that host's to start, and this one lets it go.
 */
export type ClaimVerdict = { ok: true } | ({ ok: false } & ClaimBlocker) | { ok: false; by: 'moved'; owner: HostLease };

/** Who owns a run or its claim: the host process (pid and start time) and, on a host with a lease, that lease. */
export interface RunOwner {
  hostPid: number | null;
  hostStart: number | null;
  /** The owning host's id and start (`runs.owner_host`, `owner_epoch`); null when queued without a lease. */
  ownerHost: string | null;
  ownerEpoch: number | null;
}

/** A claim's or run's owner columns, as the queries below select them. */
interface OwnerRow {
  host_pid: number | null;
  host_start: number | null;
  owner_host: string | null;
  owner_epoch: number | string | null;
}
/** The columns of {@link OwnerRow}: a claim's process, and its run's lease owner (`c`: run_claims, `r`: runs). */
const CLAIM_OWNER =
  'c.host_pid, c.host_start, r.owner_host, r.owner_epoch FROM run_claims c JOIN runs r ON r.id = c.run_id';

const ownerOf = (row: OwnerRow): RunOwner => ({
  hostPid: row.host_pid,
  hostStart: row.host_start,
  ownerHost: row.owner_host,
  ownerEpoch: row.owner_epoch === null ? null : Number(row.owner_epoch),
});

/** This process's start time (it never changes; read once rather than from /proc at every claim). */
const OWN_START = processStartTime(process.pid);

/** This process's pid scope (it never changes; read once rather than from /proc at every judged owner). */
const OWN_PID_SCOPE = pidScope();

/**
 * Whether a run's owner is on this machine, so its host process can be judged by pid and start time: always on
 * SQLite (one data folder, one machine); on PostgreSQL when no lease owns the run (a process without one queued it)
 * or when this data folder's own host does (one folder, one machine) in a start that ran in this process's pid scope
 * (the machine's boot and pid namespace). A data folder copied to another machine keeps its host id, but the
 * original's pids mean nothing there: its runs are judged by their lease, as another host's are (outside attack F1).
 * A run of another host is judged by its lease only (docs/scale-out.md §4, "Judged by the lease").
 */
export function ownerIsLocal(store: Store, owner: Pick<RunOwner, 'ownerHost' | 'ownerEpoch'>): boolean {
  if (dialectOf(dbOf(store)) !== 'postgres' || owner.ownerHost === null) return true;
  if (owner.ownerHost !== localHostId(store)) return false;
  return owner.ownerEpoch === null || startInOwnScope(store, owner.ownerHost, owner.ownerEpoch);
}

/** Per store, whether each of its host's starts ran in this process's pid scope (a start's scope never changes). */
const startsInOwnScope = new WeakMap<Store, Map<string, boolean>>();

function startInOwnScope(store: Store, hostId: string, epoch: number): boolean {
  let known = startsInOwnScope.get(store);
  if (!known) startsInOwnScope.set(store, (known = new Map<string, boolean>()));
  const key = `${hostId}/${epoch}`;
  let inScope = known.get(key);
  if (inScope === undefined) {
    // A start before migration 20 recorded no scope (null): judged by pid as it was then.
    const scope = startPidScope(store, { hostId, epoch });
    inScope = scope === null || scope === undefined || scope === OWN_PID_SCOPE;
    known.set(key, inScope);
  }
  return inScope;
}

/** Each store's data folder's host id once it has one (it never changes then): not a file read per judged owner. */
const localHostIds = new WeakMap<Store, string>();

function localHostId(store: Store): string | undefined {
  let id = localHostIds.get(store);
  if (id === undefined) {
    id = existingHostId(store.dataDir);
    if (id !== undefined) localHostIds.set(store, id);
  }
  return id;
}

/**
 * Whether a run's owner is still there: a local owner ({@link ownerIsLocal}) while its host process runs (pid and
 * start time: the start defeats pid reuse); another host while its lease holds — not run out and not taken over. A
 * lease that ran out is dead here even before a takeover: the takeover (recovery/deadHosts.ts) is what frees its runs.
 */
export function ownerLive(store: Store, owner: RunOwner): boolean {
  if (ownerIsLocal(store, owner))
    return owner.hostPid !== null && owner.hostStart !== null && processStartTime(owner.hostPid) === owner.hostStart;
  const db = dbOf(store);
  const live = db
    .prepare(
      'SELECT count(*) FROM hosts WHERE host_id = ? AND epoch = ? AND dead_at IS NULL AND ' +
        `lease_until >= ${dbNowMs(db)}`,
    )
    .pluck()
    .get(owner.ownerHost, owner.ownerEpoch);
  return Number(live) > 0;
}

/** Whether `runId` is claimed by an owner that is gone (it died holding the run; recovery has not run yet). */
export function runOwnerGone(store: Store, runId: string): boolean {
  const row = dbOf(store).prepare(`SELECT ${CLAIM_OWNER} WHERE c.run_id = ?`).get(runId) as OwnerRow | undefined;
  return row !== undefined && !ownerLive(store, ownerOf(row));
}

/** Whether `runId` holds its claim (it is about to start, or started). */
export function holdsClaim(store: Store, runId: string): boolean {
  return dbOf(store).prepare('SELECT 1 FROM run_claims WHERE run_id = ?').get(runId) !== undefined;
}

/**
 * Which runs (`r`) are this host's, for its `maxConcurrentRuns` and queue bounds (a machine's capacity, not the
 * cluster's): with a lease, the runs its host id owns, any start of it (an earlier start's runs may still hold this
 * machine's processes until recovery ends them); without one (SQLite, a process without a lease) every run.
 */
export function hostRunsCondition(store: Store): { sql: string; params: string[] } {
  const lease = store.lease;
  return lease ? { sql: 'r.owner_host = ?', params: [lease.hostId] } : { sql: '1 = 1', params: [] };
}

/**
 * What keeps `req` from starting now, read from the store (every process's runs), or undefined
 * when it may start: the session has no claimed run and no earlier waiting run (runs of a session
 * start in `run.queued` order), its binding has a free slot, and so has the host.
 */
export function claimBlocker(
  store: Store,
  req: Omit<ClaimRequest, 'runId'> & { queuedSeq: number | null },
): ClaimBlocker | undefined {
  const db = dbOf(store);
  const dead = (rows: OwnerRow[]) => rows.some((r) => !ownerLive(store, ownerOf(r)));
  const sessionClaims = db.prepare(`SELECT ${CLAIM_OWNER} WHERE c.session_id = ?`).all(req.sessionId) as OwnerRow[];
  const earlier =
    req.queuedSeq === null
      ? []
      : (db
          .prepare(
            'SELECT host_pid, host_start, owner_host, owner_epoch FROM runs WHERE session_id = ? AND ' +
              "status = 'queued' AND queued_seq < ? AND id NOT IN (SELECT run_id FROM run_claims)",
          )
          .all(req.sessionId, req.queuedSeq) as OwnerRow[]);
  if (sessionClaims.length > 0 || earlier.length > 0)
    return { by: 'session', deadOwners: dead([...sessionClaims, ...earlier]) };
  // Counted, not read: with hundreds of runs active, reading every claim for each start grew with them. The owners
  // are read only when they block (to tell whether recovery could free a slot).
  const inBinding = db.prepare('SELECT count(*) FROM run_claims WHERE binding_id = ?').pluck().get(req.bindingId);
  if ((inBinding as number) >= req.maxPerBinding) {
    const binding = db.prepare(`SELECT ${CLAIM_OWNER} WHERE c.binding_id = ?`).all(req.bindingId) as OwnerRow[];
    return { by: 'binding', deadOwners: dead(binding) };
  }
  const host = hostRunsCondition(store);
  const onHost = db.prepare(`SELECT count(*) FROM run_claims c JOIN runs r ON r.id = c.run_id WHERE ${host.sql}`);
  if ((onHost.pluck().get(...host.params) as number) >= req.maxTotal) {
    const all = db.prepare(`SELECT ${CLAIM_OWNER} WHERE ${host.sql}`).all(...host.params) as OwnerRow[];
    return { by: 'host', deadOwners: dead(all) };
  }
  return undefined;
}

/**
 * Claim the right to start a queued run, in one transaction with the checks of {@link claimBlocker}: a claim names
 * this process (pid + start time), so recovery can reclaim it if this process dies. The claim ends with the run
 * (`run.ended`/`run.interrupted` delete it in their own transaction).
 *
 * On PostgreSQL the transaction does not take the cluster's writer lock (stage 2, docs/scale-out.md §3, decision
 * CL14): it locks what its rules read, always in this order, so two claims never wait on each other in a cycle and
 * the writer lock's transactions wait for a claim only on its run's row:
 * 1. this host's `hosts` row `FOR KEY SHARE` — a takeover (`FOR UPDATE SKIP LOCKED`) skips a host claiming now, and a
 *    claim waits for a takeover in progress, then sees the host dead (the fence refuses it);
 * 2. the run's row `FOR UPDATE` — serialised with its cancel, start, re-owning, and another claim of it;
 * 3. the limit scopes (`binding:<id>`, `host:<id>`; advisory locks in sorted order) — the counts are read after them,
 *    so two hosts never both take a binding's or a host's last slot.
 * One claimed run per session is the database's `UNIQUE (session_id)`; the earliest-waiting-run rule needs no lock
 * (a later run of the session is queued after this one, and an earlier one is either waiting or claimed).
 */
export function tryClaim(store: Store, req: ClaimRequest): ClaimVerdict {
  // A host whose lease may have run out starts nothing (its runner spawner would refuse or kill it, and its host
  // requests are refused, PH11): the run waits, as for a slot, until a renewal comes — after a database outage that
  // is a quarter second, and a run posted meanwhile once crashed instead.
  if (!store.leaseHolds) return { ok: false, by: 'host', deadOwners: false };
  // A read-only look first: a waiting run that is still blocked does not take any lock.
  const row = dbOf(store)
    .prepare(
      'SELECT queued_seq AS queuedSeq, owner_host AS ownerHost, owner_epoch AS ownerEpoch FROM runs WHERE id = ?',
    )
    .get(req.runId) as { queuedSeq: number | null; ownerHost: string | null; ownerEpoch: number | null } | undefined;
  // A run another host owns now goes on to the locked look, where the fence tells a move from a takeover of this host.
  const early = ownedElsewhere(store.lease, row)
    ? undefined
    : claimBlocker(store, { ...req, queuedSeq: row?.queuedSeq ?? null });
  if (early) return { ok: false, ...early };
  return store.rowLockedTransaction(() => {
    const db = dbOf(store);
    const dialect = dialectOf(db);
    const lease = store.lease;
    if (lease)
      db.prepare(`SELECT 1 FROM hosts WHERE host_id = ? AND epoch = ?${rowLock(dialect, 'KEY SHARE')}`).get(
        lease.hostId,
        lease.epoch,
      );
    const run = db
      .prepare(`SELECT status, queued_seq FROM runs WHERE id = ?${rowLock(dialect, 'UPDATE')}`)
      .get(req.runId) as { status: string; queued_seq: number | null } | undefined;
    // A host whose lease was lost claims nothing (runFence: `LEASE_LOST`, thrown). A live host lets go of a run another
    // host owns now (moved there, runMoves.ts), whatever became of it there: claimed, started, ended.
    try {
      store.assertOwnsRuns([req.runId]);
    } catch (error) {
      const owner = error instanceof HostError && error.code === 'LEASE_LOST' ? error.data.owner : undefined;
      if (owner) return { ok: false, by: 'moved', owner: owner as HostLease };
      throw error;
    }
    if (!run || run.status !== 'queued')
      throw new Error(`run ${req.runId} is not waiting to start (${run?.status ?? 'unknown run'})`);
    lockClaimScopes(store, [`binding:${req.bindingId}`, `host:${lease?.hostId ?? '*'}`]);
    const blocker = claimBlocker(store, { ...req, queuedSeq: run.queued_seq });
    if (blocker) return { ok: false, ...blocker };
    const inserted = db
      .prepare(
        'INSERT INTO run_claims (run_id, session_id, binding_id, host_pid, host_start, at) VALUES (?, ?, ?, ?, ?, ?) ' +
          'ON CONFLICT DO NOTHING',
      )
      .run(req.runId, req.sessionId, req.bindingId, process.pid, OWN_START, new Date().toISOString());
    // Another run of the session was claimed since the blocker's read (the constraint decided): it blocks this one.
    return inserted.changes === 1 ? { ok: true } : { ok: false, by: 'session', deadOwners: false };
  });
}

/** Whether `run` is owned by a host (and start) other than `me`: moved there, or re-owned by a takeover of `me`. */
function ownedElsewhere(
  me: HostLease | undefined,
  run: { ownerHost: string | null; ownerEpoch: number | null } | undefined,
): boolean {
  if (!me || !run || run.ownerHost === null || run.ownerEpoch === null) return false;
  return run.ownerHost !== me.hostId || Number(run.ownerEpoch) !== me.epoch;
}

/** The advisory-lock class of claim scopes: the two-key form, a key space apart from the writer lock's (PG2). */
const CLAIM_SCOPE_LOCK_CLASS = 0x636c_6d73; // "clms"

/**
 * Lock `scopes` until the transaction ends (PostgreSQL; SQLite's writer already holds the file), in sorted order. A
 * scope is hashed to 32 bits: two scopes that collide only wait for each other, never count each other's claims.
 */
function lockClaimScopes(store: Store, scopes: string[]): void {
  const db = dbOf(store);
  if (dialectOf(db) !== 'postgres') return;
  const lock = db.prepare('SELECT pg_advisory_xact_lock(?, hashtext(?))');
  for (const scope of [...scopes].sort()) lock.get(CLAIM_SCOPE_LOCK_CLASS, scope);
}

/** Bounds of the cross-process poll of {@link ClaimWaker}. */
const WAKE_MIN_MS = 25;
const WAKE_MAX_MS = 400;

/**
 * Calls `onChange` whenever a claim may have been released: at once for runs of this process (the store's committed
 * events), and for other processes and hosts through the store's "commits by others" signal (topic `claims`). On
 * SQLite, which has no cross-process notification, that is a poll of `data_version` — one pragma (no disk read) per
 * tick, 25 ms doubling to 400 ms while nothing changes; on PostgreSQL a released claim's notification calls
 * `onChange` at once and the tick reads memory. Only while started (which keeps the process alive: its waiting run is
 * its work). A host process that dies commits nothing, so at the slowest pace every tick also calls `onChange` (a
 * read-only check of the blockers' owners, see {@link claimBlocker}).
 */
export class ClaimWaker {
  private timer: NodeJS.Timeout | undefined;
  private delay = WAKE_MIN_MS;
  private version: number;
  private readonly unsubscribe: () => void;
  private unsignal: (() => void) | undefined;

  constructor(
    private readonly store: Store,
    private readonly onChange: () => void,
  ) {
    this.version = this.signalVersion();
    this.unsubscribe = store.subscribe((event) => {
      if (this.timer && (event.type === 'run.ended' || event.type === 'run.interrupted'))
        queueMicrotask(() => this.onChange());
    });
  }

  /** Start watching (idempotent). */
  start(): void {
    if (this.timer) return;
    this.delay = WAKE_MIN_MS;
    this.schedule();
    this.unsignal = this.store.commits.onChange('claims', () => {
      if (!this.timer) return;
      this.version = this.signalVersion();
      this.delay = WAKE_MIN_MS;
      this.onChange();
    });
  }

  /** Stop watching. */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.unsignal?.();
    this.unsignal = undefined;
  }

  /** Stop for good. */
  close(): void {
    this.stop();
    this.unsubscribe();
  }

  private schedule(): void {
    this.timer = setTimeout(() => {
      // The store closed under a waiting run (a host shut down without draining): nothing is left to watch.
      if (this.store.isClosed || !dbOf(this.store).open) return this.stop();
      const version = this.signalVersion();
      if (version !== this.version) {
        this.version = version;
        this.delay = WAKE_MIN_MS;
        this.onChange();
      } else if (this.delay >= WAKE_MAX_MS) this.onChange();
      else this.delay = Math.min(this.delay * 2, WAKE_MAX_MS);
      if (this.timer) this.schedule();
    }, this.delay);
    // Not unref'd: a process whose run waits for another process's claim has nothing else keeping it alive.
  }

  private signalVersion(): number {
    return this.store.commits.version('claims');
  }
}

/** How many runs hold a claim, across every host process on this data folder (a metrics gauge). */
export function claimedRunsTotal(store: Store): number {
  return dbOf(store).prepare('SELECT count(*) FROM run_claims').pluck().get() as number;
}
