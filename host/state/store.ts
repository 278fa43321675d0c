import { randomFillSync, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { StoreHooks } from '../config/storeHooks.js';
import { HostError } from '../errors.js';
import { loadOrCreateAuditKey, type AuditKey } from '../audit/auditKey.js';
import { AuditLog, type AuditEntry, type Redactor } from '../audit/auditLog.js';
import { dialectOf, openDatabase, type Db, type DbStatement, type Durability } from './db.js';
import { auditTable } from './auditTable.js';
import { checkEventData } from './eventCheck.js';
import { SessionControlCache } from './sessionControlCache.js';
import {
  eventColumns,
  RUN_OWNER_EVENT_TYPES,
  type EventData,
  type EventRow,
  type EventType,
  type StoredEvent,
} from './events.js';
import { migrate } from './migrate.js';
import { PgDb } from './pg/pgDb.js';
import { PgCommitSignal } from './pg/pgCommitSignal.js';
import { notifyOthers, sqliteCommitSignal, type CommitSignal } from './commitSignal.js';
import {
  CONTROL_EVENT_TYPES,
  foldAll,
  foldControl,
  HISTORY_EVENT_TYPES,
  type SessionControl,
  type SessionView,
} from './sessionView.js';
import { RunnerStateRepo } from './runnerState.js';
import { assertTenant } from '../config/tenant.js';

/** Options of {@link Store.open}. */
export interface StoreOptions {
  dataDir: string;
  /**
   * A PostgreSQL database instead of `<dataDir>/paddock.db` (docs/scale-out.md; the host's `PADDOCK_DATABASE_URL`).
   * The audit key and every other file stay in `dataDir`.
   */
  databaseUrl?: string;
  /**
   * PostgreSQL: how long a connection may sit idle inside a transaction before the server ends it (default 2 s,
   * pgDb.ts `IDLE_IN_TRANSACTION_MS`). A host gives it a bound under its lease (decision PH8).
   */
  idleInTransactionMs?: number;
  durability?: Durability;
  /** Applied to audit data before hashing and to event data before storing. */
  redact?: Redactor;
  /** Observation points (docs/state.md, "Store hooks"); none in production. */
  hooks?: StoreHooks;
  /**
   * Told when a listener throws on a committed event (default: a process warning). The commit stands and the other
   * listeners still hear the event: a listener's bug is never the caller's error.
   */
  onListenerError?: (error: unknown, event: StoredEvent) => void;
}

export type { StoreHooks } from '../config/storeHooks.js';

/** One event to append. */
export interface NewEvent<T extends EventType = EventType> {
  type: T;
  runId?: string | null;
  data: EventData<T>;
  /** The audit record of this state change, committed with it. */
  audit?: Omit<AuditEntry, 'sessionId' | 'runId'>;
}

/** One event of one session, for {@link Store.appendMany}. */
export interface SessionEvent {
  sessionId: string;
  event: NewEvent;
}

/** A row of the `runs` view table. */
export interface RunRow {
  id: string;
  sessionId: string;
  runnerId: string;
  status: string;
  reason: string | null;
  queuedAt: string;
  startedAt: string | null;
  endedAt: string | null;
  pid: number | null;
  pidStart: number | null;
  usage: unknown;
  bindingId: string | null;
  /** The host process that owns the run, when it recorded itself. */
  hostPid: number | null;
  hostStart: number | null;
  /** The host (and its start) whose lease owns the run (docs/scale-out.md §4); null for a process without a lease. */
  ownerHost: string | null;
  ownerEpoch: number | null;
}

type Listener = (event: StoredEvent) => void;

/** The default report of a listener that threw on a committed event (no logger at this layer): redacted. */
export function warnListenerError(redact: Redactor): (error: unknown, event: StoredEvent) => void {
  return (error, event) =>
    process.emitWarning(
      `a store listener failed on committed event ${event.type} (${event.id}): ${String(redact(String(error)))}`,
    );
}

/** A stored row as an event, its data parsed. */
const storedEvent = (r: EventRow): StoredEvent => ({
  ...eventColumns(r),
  data: JSON.parse(r.data) as EventData<EventType>,
});

/** Fixed identifiers as an SQL list of string literals. */
const sqlList = (names: readonly string[]) => names.map((n) => `'${n}'`).join(', ');

const INSERT_EVENTS = 'INSERT INTO events (session_id, seq, id, type, run_id, at, data) VALUES';
const EVENT_ROW = '(?, ?, ?, ?, ?, ?, ?)';
const EVENT_COLUMNS = 7;
/** Events per multi-row INSERT of {@link Store.appendMany}: a streaming run's batch costs a call per 32 rows. */
const INSERT_ROWS = 32;
/** Sessions whose last seqs {@link Store.appendMany} reads in one statement. */
const SEQ_READ_SESSIONS = 32;

let idCounter = 0;
let idMs = -1;
let idPrefix = '';
/** Random bytes for event ids, refilled 2 048 ids at a time (as `randomUUID` keeps its own pool). */
const idRandom = Buffer.alloc(8_192);
let idRandomAt = idRandom.length;
/**
 * Event ids that sort by creation time: `evt_`, the millisecond (base 36, computed once per millisecond), a counter, 8
 * random hex digits. Unique by this construction alone: the database stopped checking it (migration 15,
 * docs/decisions.md SS1), as no query reads an event by its id. A streaming run makes thousands a second, so this is
 * kept cheap.
 */
function newEventId(): string {
  idCounter = (idCounter + 1) % 1_679_616;
  const now = Date.now();
  if (now !== idMs) {
    idMs = now;
    idPrefix = `evt_${now.toString(36).padStart(9, '0')}`;
  }
  if (idRandomAt === idRandom.length) {
    randomFillSync(idRandom);
    idRandomAt = 0;
  }
  const random = idRandom.toString('hex', idRandomAt, idRandomAt + 4);
  idRandomAt += 4;
  return `${idPrefix}${idCounter.toString(36).padStart(4, '0')}${random}`;
}

/**
 * The host's state: one SQLite database (docs/state.md). Every write goes through here; an
 * event, the view rows it changes and its audit record commit in one transaction.
 * Listeners hear about events only after they committed.
 */
export class Store {
  readonly audit: AuditLog;
  readonly runnerState: RunnerStateRepo;
  /** How watchers learn of other connections' commits (commitSignal.ts): a poll on SQLite, LISTEN on PostgreSQL. */
  readonly commits: CommitSignal;
  private readonly listeners = new Set<Listener>();
  private readonly stmts;
  private readonly redact: Redactor;
  /**
   * Whether stored event data passes through a redactor (`StoreOptions.redact`): then a stored event's data is the
   * redacted copy, and a writer may hand it out as such instead of redacting it again (journal.ts).
   */
  readonly redacts: boolean;
  private closed = false;
  private readonly hooks: StoreHooks;
  private readonly onListenerError: (error: unknown, event: StoredEvent) => void;
  private eventsAppended = 0;
  private effectsStarted = 0;
  /** Events appended inside a transaction that has not committed yet. */
  private uncommitted: StoredEvent[] = [];
  /** Inside a {@link rowLockedTransaction}: no writer lock is held, so no event may be appended. */
  private rowLockedOnly = false;
  /** See {@link holdToLease}. */
  private leaseDeadline: number | undefined;
  /** Sessions' control folds, caught up from their last seq at each start (sessionControlCache.ts). */
  private readonly controlCache = new SessionControlCache((id, after) => this.controlEventsAfter(id, after));
  /** The last-seq reads of {@link lastSeqs}, by how many sessions each reads. */
  private readonly lastSeqReads = new Map<number, DbStatement>();
  /** The host lease whose runs this store's writes are about (runFence.ts); none without a lease (SQLite today). */
  private owner: { hostId: string; epoch: number } | undefined;
  /** Refuses, inside the writing transaction, a write about runs this host does not own (runFence.ts). */
  private runFence: ((runIds: readonly string[]) => void) | undefined;

  private constructor(
    /** The connection: only host/state/ modules reach it, through {@link dbOf}. */
    private readonly db: Db,
    readonly key: AuditKey,
    readonly dataDir: string,
    redact: Redactor | undefined,
    hooks: StoreHooks,
    onListenerError: (error: unknown, event: StoredEvent) => void,
    commits: CommitSignal,
  ) {
    this.commits = commits;
    this.redacts = redact !== undefined;
    this.redact = redact ?? ((v) => v);
    this.hooks = hooks;
    this.onListenerError = onListenerError;
    this.audit = new AuditLog(auditTable(db), key, this.redact);
    this.runnerState = new RunnerStateRepo(db, this.redact);
    this.stmts = {
      insertEvent: db.prepare(`${INSERT_EVENTS} ${EVENT_ROW}`),
      insertEvents: db.prepare(`${INSERT_EVENTS} ${Array<string>(INSERT_ROWS).fill(EVENT_ROW).join(', ')}`),
      findSession: db
        .prepare('SELECT id FROM sessions WHERE tenant = ? AND binding_id = ? AND conversation_key = ?')
        .pluck(),
      insertSession: db.prepare(
        'INSERT INTO sessions (id, tenant, binding_id, conversation_key, created_at) VALUES (?, ?, ?, ?, ?)',
      ),
      readEvents: db.prepare('SELECT * FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?'),
      // The types as literals: fixed identifiers, no quote to escape.
      controlEvents: db.prepare(
        `SELECT * FROM events WHERE session_id = ? AND seq > ? AND type IN (${sqlList(CONTROL_EVENT_TYPES)}) ` +
          'ORDER BY seq',
      ),
      historyEvents: db.prepare(
        `SELECT * FROM events WHERE session_id = ? AND type IN (${sqlList(HISTORY_EVENT_TYPES)}) ORDER BY seq`,
      ),
      runQueued: db.prepare(
        'INSERT INTO runs (id, session_id, runner_id, status, queued_at, last_seq, binding_id, host_pid, ' +
          "host_start, queued_seq, owner_host, owner_epoch) VALUES (?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?)",
      ),
      runStarted: db.prepare(
        "UPDATE runs SET status = 'running', started_at = ?, pid = ?, pid_start = ?, last_seq = ? WHERE id = ?",
      ),
      runEnded: db.prepare(
        'UPDATE runs SET status = ?, reason = ?, ended_at = ?, usage = ?, last_seq = ? WHERE id = ?',
      ),
      setPaused: db.prepare('UPDATE sessions SET paused_reason = ? WHERE id = ?'),
      // A run's claim ends in the transaction that ends the run (docs/state.md, "Claims").
      releaseClaim: db.prepare('DELETE FROM run_claims WHERE run_id = ?'),
    };
  }

  /** Open the data folder's database, apply migrations, load (or create) the audit key. */
  static open(options: StoreOptions): Store {
    const pg = options.databaseUrl
      ? new PgDb(
          options.databaseUrl,
          options.idleInTransactionMs ? { idleInTransactionMs: options.idleInTransactionMs } : {},
        )
      : undefined;
    const db: Db = pg ?? openDatabase(join(options.dataDir, 'paddock.db'), options.durability);
    try {
      // The LISTEN connection opens on the first watcher's use, not here: a one-off command never needs it.
      const commits = pg ? new PgCommitSignal(options.databaseUrl!, () => pg.backendPid) : sqliteCommitSignal(db);
      const { applied } = migrate(db);
      const key = loadOrCreateAuditKey(options.dataDir);
      const store = new Store(
        db,
        key,
        options.dataDir,
        options.redact,
        options.hooks ?? {},
        options.onListenerError ?? warnListenerError(options.redact ?? ((v) => v)),
        commits,
      );
      // This folder's key enters the chain the first time it writes to this database: a new key file, or a folder
      // joining a shared database with the key it already had (docs/scale-out.md §4). Looked up first without the
      // write lock (an index of the key records; migration 18), so a start that finds its record takes none.
      const introduce = !store.audit.hasKeyRecord();
      if (introduce) store.hooks.beforeKeyIntroduced?.();
      if (introduce || applied.length > 0)
        store.transaction(() => {
          // introduceKey looks again under the write lock, which every writer of the database takes in turn: of
          // several processes or hosts that all found no record, the first appends it and the others see it.
          if (introduce) store.audit.introduceKey();
          if (applied.length > 0)
            store.audit.append({ type: 'state.migrated', actor: 'host', data: { versions: applied } });
        });
      return store;
    } catch (error) {
      db.close();
      throw error;
    }
  }

  /**
   * Run `fn` in one transaction (nested calls join the outer one as a savepoint). Listeners hear
   * about its events only once the outermost transaction has committed; a rollback drops them.
   */
  transaction<T>(fn: () => T): T {
    return this.runTransaction(fn, 'writer');
  }

  /**
   * {@link transaction} without the cluster's writer lock on PostgreSQL (stage 2, docs/scale-out.md §3): `fn` must lock
   * every row its rules read (`FOR UPDATE`, the lock fragments of dialectSql.ts) and write nothing another rule reads
   * under the writer lock alone — no events, no audit. Claims only (claims.ts). On SQLite it is {@link transaction}.
   */
  rowLockedTransaction<T>(fn: () => T): T {
    return this.runTransaction(fn, 'rows');
  }

  private runTransaction<T>(fn: () => T, locks: 'writer' | 'rows'): T {
    const outermost = !this.db.inTransaction;
    const mark = this.uncommitted.length;
    let value: T;
    try {
      // IMMEDIATE: take the write lock at BEGIN. A deferred transaction that reads and then writes
      // fails with SQLITE_BUSY (no wait) when another process committed in between; an immediate one
      // waits for the lock (busy_timeout) and sees the latest data, so check-then-write is atomic
      // across every process on this data folder (claims, queue limits, dedupe, recovery).
      const tx = this.db.transaction(fn);
      if (!outermost) value = tx();
      else if (locks === 'rows' && tx.rowLocked) {
        this.rowLockedOnly = true;
        try {
          value = tx.rowLocked();
        } finally {
          this.rowLockedOnly = false;
        }
      } else value = tx.immediate();
    } catch (error) {
      this.uncommitted.length = mark; // this (save)point rolled back: its events never happened
      const code = (error as { code?: string }).code;
      // PG_53100: PostgreSQL's disk_full.
      if (code === 'SQLITE_FULL' || code === 'PG_53100') {
        const where = dialectOf(this.db) === 'postgres' ? 'the PostgreSQL database' : join(this.dataDir, 'paddock.db');
        throw new HostError(
          'STATE_FULL',
          `the disk holding ${where} is full; nothing of this change was written`,
          { dataDir: this.dataDir },
          { cause: error },
        );
      }
      throw error;
    }
    // Committed: what listeners do with it cannot undo it, so it is not the caller's error (publishCommitted).
    if (outermost) this.publishCommitted();
    return value;
  }

  /**
   * The session of (tenant, binding, conversation), created with its `session.created` event if new. The tenant is
   * recorded once and never changes (docs/state.md, "Tenants"): a binding that moves to another tenant starts new
   * sessions there. A tenant name that is not one (`[a-z0-9][a-z0-9_-]{0,62}`, no folding) is refused.
   */
  ensureSession(tenant: string, bindingId: string, conversationKey: string): { sessionId: string; created: boolean } {
    assertTenant(tenant);
    return this.transaction(() => {
      const existing = this.stmts.findSession.get(tenant, bindingId, conversationKey) as string | undefined;
      if (existing) return { sessionId: existing, created: false };
      const sessionId = `ses_${randomUUID()}`;
      this.stmts.insertSession.run(sessionId, tenant, bindingId, conversationKey, new Date().toISOString());
      this.append(sessionId, [
        {
          type: 'session.created',
          data: { tenant, bindingId, conversationKey },
          audit: { type: 'session.created', actor: 'host', data: { tenant, bindingId, conversationKey } },
        },
      ]);
      return { sessionId, created: true };
    });
  }

  /**
   * Append events to a session's log with the next gap-free seqs, update view rows, and
   * write their audit records — all in one transaction. Listeners hear about them after commit.
   */
  append(sessionId: string, events: NewEvent[]): StoredEvent[] {
    return this.appendMany(events.map((event) => ({ sessionId, event })));
  }

  /**
   * {@link append} for events of any sessions, in order, in one transaction: a stream's group commit
   * (appendBatcher.ts). The sessions' last seqs are read once per call, in one statement (one round trip on
   * PostgreSQL, however many sessions the batch holds): the write lock is held from `BEGIN IMMEDIATE` to `COMMIT`,
   * so no other writer can take a seq in between, and a failure rolls the whole call back (with its seqs).
   */
  appendMany(items: readonly SessionEvent[]): StoredEvent[] {
    const at = new Date().toISOString();
    return this.transaction(() => {
      // A seq is "the session's last + 1" only under the writer lock (stage 1); a row-locked transaction holds none.
      if (this.rowLockedOnly) throw new Error('an event cannot be appended in a row-locked transaction (claims only)');
      if (this.runFence) {
        const runIds = items.flatMap(({ event: e }) => (e.runId && RUN_OWNER_EVENT_TYPES.has(e.type) ? [e.runId] : []));
        this.assertOwnsRuns([...new Set(runIds)]);
      }
      const lastSeq = this.lastSeqs([...new Set(items.map((item) => item.sessionId))]);
      // Rows wait here and go in INSERT_ROWS at a time (one statement call instead of one each); nothing in this
      // call reads the events table after a session's first seq, so a row's insert may come after its view and audit
      // updates. Any failure rolls the whole call back.
      const rows: unknown[] = [];
      const stored = items.map(({ sessionId, event: e }) => {
        checkEventData(e.type, e.data);
        const seq = lastSeq.get(sessionId)! + 1;
        lastSeq.set(sessionId, seq);
        const event: StoredEvent = {
          id: newEventId(),
          sessionId,
          seq,
          type: e.type,
          runId: e.runId ?? null,
          at,
          data: this.redact(e.data) as EventData<EventType>,
        };
        rows.push(sessionId, seq, event.id, event.type, event.runId, at, JSON.stringify(event.data));
        if (rows.length === INSERT_ROWS * EVENT_COLUMNS) {
          this.stmts.insertEvents.run(rows);
          rows.length = 0;
        }
        this.updateViews(event);
        if (e.audit) this.audit.append({ ...e.audit, sessionId, runId: event.runId }, at);
        this.uncommitted.push(event);
        return event;
      });
      for (let i = 0; i < rows.length; i += EVENT_COLUMNS) this.stmts.insertEvent.run(rows.slice(i, i + EVENT_COLUMNS));
      // Other hosts' streams of these sessions wake at COMMIT (PostgreSQL; SQLite's watchers poll data_version).
      for (const sessionId of lastSeq.keys()) notifyOthers(this.db, 'events', sessionId);
      return stored;
    });
  }

  /**
   * Each session's highest seq (0 for none), up to {@link SEQ_READ_SESSIONS} sessions a statement. A subquery per
   * session, not `GROUP BY session_id`: each `max(seq)` is one probe at the end of the session's primary key range on
   * both stores, where a grouped max walks every event of the session.
   */
  private lastSeqs(sessionIds: readonly string[]): Map<string, number> {
    const last = new Map<string, number>();
    for (let i = 0; i < sessionIds.length; i += SEQ_READ_SESSIONS) {
      const chunk = sessionIds.slice(i, i + SEQ_READ_SESSIONS);
      let read = this.lastSeqReads.get(chunk.length);
      if (!read) {
        const one = '(SELECT coalesce(max(seq), 0) FROM events WHERE session_id = ?)';
        read = this.db.prepare(`SELECT ${Array<string>(chunk.length).fill(one).join(', ')}`).raw();
        this.lastSeqReads.set(chunk.length, read);
      }
      const seqs = read.get(chunk) as number[];
      chunk.forEach((sessionId, j) => last.set(sessionId, seqs[j]!));
    }
    return last;
  }

  private publishCommitted(): void {
    const committed = this.uncommitted;
    this.uncommitted = [];
    for (const event of committed) {
      this.eventsAppended += 1;
      for (const listener of this.listeners) {
        try {
          listener(event);
        } catch (error) {
          this.onListenerError(error, event);
        }
      }
      this.hooks.afterEventCommitted?.(event, this.eventsAppended);
    }
  }

  /**
   * Own the runs this store queues from now on as `owner`, and check every write about a run with `fence` inside its
   * transaction (runFence.ts sets both; docs/scale-out.md §4). Without it (SQLite today) nothing is fenced.
   */
  fenceRuns(owner: { hostId: string; epoch: number }, fence: (runIds: readonly string[]) => void): void {
    this.owner = owner;
    this.runFence = fence;
  }

  /** Whether several hosts may share this store (PostgreSQL), so each holds a lease (docs/scale-out.md §4). */
  get shared(): boolean {
    return dialectOf(this.db) === 'postgres';
  }

  /** The host lease this store's runs are owned by ({@link fenceRuns}), or undefined (no lease: SQLite, read paths). */
  get lease(): { hostId: string; epoch: number } | undefined {
    return this.owner;
  }

  /**
   * Until when, on this process's monotonic clock (`performance.now()`), this host's lease surely holds: set at every
   * renewal by the lease keeper (leaseKeeper.ts); undefined when no lease bounds the host (SQLite, a clean stop).
   */
  holdToLease(deadline: number | undefined): void {
    this.leaseDeadline = deadline;
  }

  /**
   * Whether this host may act for its runs now (a runner's host request, a gateway call): no lease bounds it, or the
   * lease surely holds. A host resumed past its lease must not carry out what its runners asked meanwhile: another
   * host may have taken their runs over (outside attack 5, F2), and the fence sees only what reaches the database.
   */
  get leaseHolds(): boolean {
    return this.leaseDeadline === undefined || performance.now() < this.leaseDeadline;
  }

  /** Why an action for a run is refused while {@link leaseHolds} says no (one text for every place that checks). */
  static readonly LEASE_MAY_HAVE_RUN_OUT =
    "this host's lease may have run out (another host may have taken the run over); it acts for no run until the " +
    'lease is renewed';

  /** Throws (`LEASE_LOST`) unless this host owns every run of `runIds`; call inside the writing transaction. */
  assertOwnsRuns(runIds: readonly string[]): void {
    if (runIds.length > 0) this.runFence?.(runIds);
  }

  /** Called by the effect ledger between an intent and the effect (the `beforeEffect` hook). */
  afterEffectIntent(): void {
    this.effectsStarted += 1;
    this.hooks.beforeEffect?.(this.effectsStarted);
  }

  /** Why a session is paused, or null when it is not. */
  pausedReason(sessionId: string): string | null {
    return (
      (this.db.prepare('SELECT paused_reason FROM sessions WHERE id = ?').pluck().get(sessionId) as
        string | null | undefined) ?? null
    );
  }

  /** Events of a session after `afterSeq`, in order (for readers catching up). */
  readEvents(sessionId: string, afterSeq = 0, limit = 1_000_000): StoredEvent[] {
    return (this.stmts.readEvents.all(sessionId, afterSeq, limit) as EventRow[]).map((r) => this.readBack(r));
  }

  /**
   * What a run's start needs of its session (its resume pointers, open effects, pause, undelivered interruptions),
   * folded from only the events those come from: a run's start never parses the session's updates, which are most of
   * a long conversation's log (docs/state.md, "Reads").
   */
  sessionControl(sessionId: string): SessionControl {
    // Inside a transaction the fold may see this transaction's own uncommitted events: read whole, cache nothing.
    if (this.db.inTransaction) return foldControl(sessionId, this.controlEventsAfter(sessionId, 0));
    return this.controlCache.control(sessionId);
  }

  private controlEventsAfter(sessionId: string, afterSeq: number): StoredEvent[] {
    return (this.stmts.controlEvents.all(sessionId, afterSeq) as EventRow[]).map(storedEvent);
  }

  /** A session's events of the types a run's history is made of (host/runs/history.ts), in order. */
  historyEvents(sessionId: string): StoredEvent[] {
    return (this.stmts.historyEvents.all(sessionId) as EventRow[]).map((r) => this.readBack(r));
  }

  /**
   * A stored event as this host hands it out. On a shared store another host may have written it, redacted with that
   * host's secrets only: a secret this host knows and that host did not is redacted now (outside attack 7, F3).
   */
  private readBack(r: EventRow): StoredEvent {
    const event = storedEvent(r);
    return this.shared ? { ...event, data: this.readRedacted(event.data) } : event;
  }

  /** {@link redacted} on a shared store (see readBack), `value` as is on a store only this host writes. */
  readRedacted<T>(value: T): T {
    return this.shared ? this.redacted(value) : value;
  }

  /** Fold a session's log into its view. */
  session(sessionId: string): SessionView {
    const exists = this.db.prepare('SELECT 1 FROM sessions WHERE id = ?').pluck().get(sessionId);
    if (!exists) throw new HostError('NOT_FOUND', `no session ${sessionId}`);
    return foldAll(sessionId, this.readEvents(sessionId));
  }

  /** A run's view row. */
  run(runId: string): RunRow | undefined {
    const row = this.db.prepare('SELECT * FROM runs WHERE id = ?').get(runId) as Record<string, unknown> | undefined;
    return row ? toRunRow(row) : undefined;
  }

  /** Runs, newest first, optionally by status, binding and tenant (the tenant of the run's session). */
  runs(filter: RunFilter & { limit?: number } = {}): RunRow[] {
    const { clauses, args } = runFilterSql(filter);
    const where = clauses.length ? `WHERE ${clauses.join(' AND ')}` : '';
    const rows = this.db
      .prepare(`SELECT * FROM runs ${where} ORDER BY queued_at DESC, id LIMIT ?`)
      .all(...args, filter.limit ?? 100);
    return (rows as Record<string, unknown>[]).map(toRunRow);
  }

  /** `value` as this store writes it: through its redactor (`StoreOptions.redact`), for a module's own rows. */
  redacted<T>(value: T): T {
    return this.redact(value) as T;
  }

  /** Hear about every committed event. Returns an unsubscribe function. */
  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Whether {@link close} was called: a poller's timer that outlived its host stops on this. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** Sign the audit head and close the database. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.commits.close();
    this.transaction(() => this.audit.checkpointHead());
    this.db.close();
  }

  /** End a run's claim, waking other connections' waiting runs at COMMIT (commitSignal.ts). */
  private releaseClaim(runId: string | null): void {
    this.stmts.releaseClaim.run(runId);
    notifyOthers(this.db, 'claims');
  }

  /** Keep the `runs` and `sessions` view rows in step with an event (inside its transaction). */
  private updateViews(e: StoredEvent): void {
    switch (e.type) {
      case 'run.queued': {
        const d = e.data as EventData<'run.queued'>;
        this.stmts.runQueued.run(
          e.runId,
          e.sessionId,
          d.runner,
          e.at,
          e.seq,
          d.bindingId ?? null,
          d.host?.pid ?? null,
          d.host?.start ?? null,
          e.seq,
          this.owner?.hostId ?? null,
          this.owner?.epoch ?? null,
        );
        return;
      }
      case 'run.started': {
        const d = e.data as EventData<'run.started'>;
        this.stmts.runStarted.run(e.at, d.pid, d.pidStart ?? null, e.seq, e.runId);
        return;
      }
      case 'run.ended': {
        const d = e.data as EventData<'run.ended'>;
        // The host-metered usage (run.ended data.usage) wins over the runner's own claim in its result.
        const usage = d.usage ?? d.result?.usage;
        this.stmts.runEnded.run(d.status, d.reason, e.at, usage ? JSON.stringify(usage) : null, e.seq, e.runId);
        this.releaseClaim(e.runId);
        return;
      }
      case 'run.interrupted':
        this.stmts.runEnded.run(
          'interrupted',
          (e.data as EventData<'run.interrupted'>).reason,
          e.at,
          null,
          e.seq,
          e.runId,
        );
        this.releaseClaim(e.runId);
        return;
      case 'session.paused':
        this.stmts.setPaused.run((e.data as EventData<'session.paused'>).reason, e.sessionId);
        return;
      case 'session.resumed':
        this.stmts.setPaused.run(null, e.sessionId);
        return;
    }
  }
}

/** The store's connection, for host/state/ modules only (a test fails on any use outside host/state/). */
export function dbOf(store: Store): Db {
  return store['db'];
}

/** Which runs a list asks for: the tenant of the run's session, statuses, binding, session. */
export interface RunFilter {
  tenant?: string;
  status?: string[];
  bindingId?: string;
  sessionId?: string;
}

/** The WHERE clauses (joined with AND by the caller) and their arguments of a {@link RunFilter} over `runs`. */
export function runFilterSql(filter: RunFilter): { clauses: string[]; args: unknown[] } {
  const clauses: string[] = [];
  const args: unknown[] = [];
  if (filter.tenant !== undefined) {
    clauses.push('session_id IN (SELECT id FROM sessions WHERE tenant = ?)');
    args.push(filter.tenant);
  }
  if (filter.status?.length) {
    clauses.push(`status IN (${filter.status.map(() => '?').join(',')})`);
    args.push(...filter.status);
  }
  if (filter.bindingId !== undefined) {
    clauses.push('binding_id = ?');
    args.push(filter.bindingId);
  }
  if (filter.sessionId !== undefined) {
    clauses.push('session_id = ?');
    args.push(filter.sessionId);
  }
  return { clauses, args };
}

/** A `runs` row as the store's readers return it. */
export function toRunRow(r: Record<string, unknown>): RunRow {
  return {
    id: r.id as string,
    sessionId: r.session_id as string,
    runnerId: r.runner_id as string,
    status: r.status as string,
    reason: (r.reason as string | null) ?? null,
    queuedAt: r.queued_at as string,
    startedAt: (r.started_at as string | null) ?? null,
    endedAt: (r.ended_at as string | null) ?? null,
    pid: (r.pid as number | null) ?? null,
    pidStart: (r.pid_start as number | null) ?? null,
    usage: r.usage ? JSON.parse(r.usage as string) : null,
    bindingId: (r.binding_id as string | null) ?? null,
    hostPid: (r.host_pid as number | null) ?? null,
    hostStart: (r.host_start as number | null) ?? null,
    ownerHost: (r.owner_host as string | null) ?? null,
    ownerEpoch: r.owner_epoch === null || r.owner_epoch === undefined ? null : Number(r.owner_epoch),
  };
}
