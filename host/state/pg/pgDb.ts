import { createRequire } from 'node:module';
import { databaseUrlSecrets, shownDatabaseUrl } from '../../config/databaseUrl.js';
import { HostError } from '../../errors.js';
import type { Db, DbStatement, DbTransaction, TransactionFn } from '../db.js';
import { translateSql, type TranslatedSql } from './translate.js';

const require = createRequire(import.meta.url);

/** What paddock uses of pg-native's client (it ships no types). */
interface NativeClient {
  arrayMode: boolean;
  connectSync(url: string): void;
  querySync(text: string): Record<string, unknown>[] | unknown[][];
  prepareSync(name: string, text: string, nParams: number): void;
  executeSync(name: string, values: unknown[]): Record<string, unknown>[] | unknown[][];
  end(): void;
  pq: {
    cmdTuples(): string;
    resultErrorFields(): Record<string, string> | undefined;
    /** libpq's PQconsumeInput: reads what the server sent, never blocking; false once the connection is gone. */
    consumeInput(): boolean;
    /** libpq's PQtransactionStatus: 0 idle, 1 active, 2 in a transaction, 3 in a failed one, 4 connection bad. */
    transactionStatus(): number;
  };
}
interface TypeParsers {
  getTypeParser(oid: number, format?: string): (value: string) => unknown;
}

/** PostgreSQL type oids whose values come back as numbers, as SQLite returns them. */
const BIGINT = 20;
const NUMERIC = 1700;
const BOOL = 16;

/** PQtransactionStatus's PQTRANS_UNKNOWN: how libpq tells that a connection is gone. */
const CONNECTION_BAD = 4;

/** The store connection's `application_name` when its URL names none: how an operator tells it in pg_stat_activity. */
export const STORE_APPLICATION_NAME = 'paddock-store';

/** Session settings every connection of a {@link PgDb} gets: the first one, and each one opened after a loss. */
export interface PgDbOptions {
  /** Every transaction read-only (`default_transaction_read_only`): the read-only commands (decision PH5). */
  readOnly?: boolean;
  /** `idle_in_transaction_session_timeout` of its connections, ms (default {@link IDLE_IN_TRANSACTION_MS}). */
  idleInTransactionMs?: number;
}

/**
 * How long PostgreSQL lets a store connection sit idle inside a transaction before it ends the connection
 * (`idle_in_transaction_session_timeout`), unless the URL sets it. A store transaction is a synchronous closure:
 * between its statements only this process's own code runs, for milliseconds. A host paused inside one (SIGSTOP, a
 * frozen VM, a cut network) would otherwise hold the writer lock (PG2) for as long as it stays paused, and every other
 * host, blocked synchronously on that lock, would lose its lease and stop (the outside attack's F1 of 2026-12-03).
 * Ended after this, its lock is released; the paused host's transaction fails when it resumes.
 */
export const IDLE_IN_TRANSACTION_MS = 2_000;

/** Values as better-sqlite3 returns them: `bigint`/`numeric` (counts, sums) as numbers, booleans as 1/0. */
function sqliteLikeTypes(): TypeParsers {
  const types = require('pg-types') as TypeParsers;
  return {
    getTypeParser(oid) {
      if (oid === BIGINT || oid === NUMERIC) return Number;
      if (oid === BOOL) return (v) => (v === 't' ? 1 : 0);
      return types.getTypeParser(oid, 'text');
    },
  };
}

/**
 * The advisory lock every PostgreSQL transaction of the store takes at BEGIN (decision PG2, stage 1): one writer at a
 * time across every host, as SQLite's `BEGIN IMMEDIATE` is one writer per file. Released by COMMIT or ROLLBACK, and
 * by the server when a connection dies.
 */
export const WRITER_LOCK_KEY = 0x7061_6464; // "padd"

/** What every outermost transaction starts with. Sent twice it does what it did once: a lost one is sent again. */
const BEGIN = `BEGIN; SELECT pg_advisory_xact_lock(${WRITER_LOCK_KEY})`;
/** What a row-locked transaction (stage 2: claims) starts with: no writer lock; its statements lock their rows. */
const BEGIN_ROW_LOCKED = 'BEGIN';

/**
 * pg-native's client class. It is an optional dependency (its libpq build needs Debian's libpq-dev): a host that never
 * uses PostgreSQL installs without it, and one that does is told what is missing.
 */
function loadClient(): new (config: { types: TypeParsers }) => NativeClient {
  try {
    return require('pg-native') as new (config: { types: TypeParsers }) => NativeClient;
  } catch (error) {
    throw new HostError(
      'STATE_UNAVAILABLE',
      'the PostgreSQL store needs the optional dependency pg-native (built against libpq: apt-get install libpq-dev, ' +
        `then npm install): ${(error as Error).message}`,
      {},
      { cause: error },
    );
  }
}

/** libc collations that compare text as SQLite's BINARY does: by byte (UTF-8's byte order is code point order). */
const BYTE_ORDER_COLLATIONS = new Set(['C', 'POSIX', 'C.UTF-8', 'C.utf8']);

/** Clients just ended, kept from the garbage collector until libuv has finished closing their socket watcher. */
const closing = new Set<NativeClient>();
/** Clients ended already: a lost connection is ended when it is replaced, and again by close() only if it was not. */
const ended = new WeakSet<NativeClient>();

/** End a client once. */
function release(client: NativeClient): void {
  if (ended.has(client)) return;
  ended.add(client);
  client.end();
  // libpq's addon closes its socket watcher with uv_close (completed in a later loop phase) and then lets its
  // object be collected. A raw pg-native client ended in the same turn as a few hundred statements on another
  // connection aborted a test process (`uv__finish_close` assertion, reproduced every time); through this close
  // it did not. The client stays referenced until a closing phase has surely run after this call: 100 ms, then two
  // check phases. A timer alone left a path open: ended from inside a closing phase (a close event's handler), the
  // watcher waits for the next loop's closing phase, which comes after that loop's timers, so the timer could let the
  // client go first and a collection free the watcher libuv was about to close. Whether that path is the rare abort
  // still seen after a test file's stores were closed at its end (CI, 2026-12-03) is not proven: it did not reproduce.
  closing.add(client);
  const afterTwoChecks = (hops: number) =>
    setImmediate(() => {
      if (hops > 1) return afterTwoChecks(hops - 1);
      closing.delete(client);
      if (closing.size === 0) for (const resolve of drained.splice(0)) resolve();
    }).unref();
  setTimeout(() => afterTwoChecks(2), 100).unref();
}

/** Who waits for {@link pgClientsReleased}. */
const drained: (() => void)[] = [];

/**
 * Resolves once every client ended so far is past its closing phase (a process about to exit, e.g. a test file's
 * worker, waits for it: one that exited while a client's watcher was still closing aborted once in `uv__finish_close`).
 */
export function pgClientsReleased(): Promise<void> {
  return closing.size === 0 ? Promise.resolve() : new Promise((resolve) => drained.push(resolve));
}

/** String literals, blanked before {@link readsOnly} looks for words: `type = 'run.update'` is still a read. */
const LITERALS = /'(?:[^']|'')*'/g;
/** What makes a SELECT more than a read: a write, a row lock, a function with an effect, a second statement. */
const EFFECTS = new RegExp(
  '\\b(insert|update|delete|merge|into|share|nextval|setval|set_config|pg_notify|pg_advisory\\w*|pg_\\w*_backend)\\b' +
    '|;\\s*\\S',
  'i',
);

/**
 * Whether a statement only reads: one SELECT that writes nothing, locks no row and calls no function with an effect.
 * Run twice it answers what it would have answered once, so it is the statement sent again on a new connection after
 * the old one was lost waiting for its answer (decision PH7).
 */
export function readsOnly(sql: string): boolean {
  const bare = sql.replace(LITERALS, "''").trim();
  return /^select\b/i.test(bare) && !EFFECTS.test(bare);
}

/** A parameter as libpq takes it: text (bytea as its hex form), or null. */
function toParam(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  if (Buffer.isBuffer(value)) return `\\x${value.toString('hex')}`;
  throw new TypeError(`cannot bind a ${typeof value} to a PostgreSQL statement (SQLite would refuse it too)`);
}

/** better-sqlite3's argument forms: positional values, arrays of them (spread), or one object of named values. */
function layOut(t: TranslatedSql, args: unknown[]): (string | null)[] {
  if (t.names.length > 0) {
    const named = (args[0] ?? {}) as Record<string, unknown>;
    return t.names.map((name) => {
      if (!(name in named)) throw new RangeError(`missing named parameter "${name}"`);
      return toParam(named[name]);
    });
  }
  const flat = args.flat();
  if (flat.length !== t.count) throw new RangeError(`the statement takes ${t.count} values, ${flat.length} given`);
  return flat.map(toParam);
}

/** Where a loss happened, and so what is known of the statement or transaction it cut. */
type LossAt = 'statement' | 'transaction' | 'commit';
const LOSS_OUTCOME: Record<LossAt, string> = {
  statement: 'during a statement outside a transaction (a write may or may not have been applied)',
  transaction: 'inside a transaction (the server rolled it back: nothing of it was written)',
  commit: 'at COMMIT (the transaction may or may not have been committed)',
};

/**
 * A PostgreSQL connection shaped as the {@link Db} host/state/ uses (docs/scale-out.md §1–§3): every statement is one
 * blocking libpq call (pg-native), translated once (`translate.ts`) and prepared once per connection; transactions
 * are synchronous closures, nested ones savepoints, and each outermost one holds {@link WRITER_LOCK_KEY}. A lost
 * connection (a restart, `pg_terminate_backend`, a cut) is replaced outside a transaction (decision PH7, {@link call}).
 */
export class PgDb implements Db {
  readonly dialect = 'postgres' as const;
  private client: NativeClient;
  /** Each source's translation, kept for good; its prepared statement's name is the connection's (`prepared`). */
  private readonly translated = new Map<string, TranslatedSql>();
  private readonly prepared = new Map<string, string>();
  private depth = 0;
  private closed = false;
  /** The connection was found gone: nothing more is sent on it, the next statement outside a transaction reopens. */
  private lost = false;
  /** The outermost transaction's COMMIT is being sent: a loss now leaves its outcome unknown. */
  private committing = false;
  private pid = 0;
  /** Connections opened so far (1 after the first; each one opened after a loss adds one): for tests and metrics. */
  connections = 0;

  constructor(
    private readonly url: string,
    private readonly options: PgDbOptions = {},
  ) {
    try {
      this.client = this.connect();
    } catch (error) {
      throw new HostError(
        'STATE_UNAVAILABLE',
        `cannot open the PostgreSQL state database: ${(error as Error).message.trim()}`,
        {},
        { cause: error },
      );
    }
    this.refuseOtherCollation();
  }

  /** The server process of the connection now (another after a loss): its own notifications carry it. */
  get backendPid(): number {
    return this.pid;
  }

  /** A new connection with this store's session settings (the URL's own — search_path, … — come with it). */
  private connect(): NativeClient {
    const client = new (loadClient())({ types: sqliteLikeTypes() });
    try {
      // libpq's fallback: an application_name the URL names wins.
      const sep = this.url.includes('?') ? '&' : '?';
      client.connectSync(`${this.url}${sep}fallback_application_name=${STORE_APPLICATION_NAME}`);
      // Notices (`CREATE … IF NOT EXISTS` that exists) would go to stdout, which may be a protocol stream.
      client.querySync('SET client_min_messages = warning');
      if (this.options.readOnly) client.querySync('SET default_transaction_read_only = on');
      const idleMs = Math.floor(this.options.idleInTransactionMs ?? IDLE_IN_TRANSACTION_MS);
      if (!this.url.includes('idle_in_transaction_session_timeout'))
        client.querySync(`SET idle_in_transaction_session_timeout = ${idleMs}`);
      const [row] = client.querySync('SELECT pg_backend_pid() AS pid') as { pid: number }[];
      this.pid = row!.pid;
    } catch (error) {
      release(client);
      throw error;
    }
    this.connections += 1;
    return client;
  }

  /**
   * Text compares and sorts byte by byte in SQLite (BINARY), and every ORDER BY, keyset page and `id > ?` cursor of
   * the store relies on it. A PostgreSQL database whose collation is a language's (en_US, ICU) orders `run_B` before
   * `run_a` and skips punctuation at first, so the same statement would answer another order: such a database is
   * refused at open, naming the fix (docs/scale-out.md §2).
   */
  private refuseOtherCollation(): void {
    const [row] = this.client.querySync(
      'SELECT datcollate AS lc, datlocprovider AS provider FROM pg_database WHERE datname = current_database()',
    ) as { lc: string; provider: string }[];
    if (row && row.provider === 'c' && BYTE_ORDER_COLLATIONS.has(row.lc)) return;
    this.close();
    throw new HostError(
      'STATE_UNAVAILABLE',
      `the PostgreSQL state database sorts text by collation ${row?.lc ?? 'unknown'} (provider ` +
        `${row?.provider ?? 'unknown'}); paddock needs byte order, as SQLite's: create the database with ` +
        "CREATE DATABASE … TEMPLATE template0 LOCALE_PROVIDER libc LC_COLLATE 'C' LC_CTYPE 'C'",
    );
  }

  get inTransaction(): boolean {
    return this.depth > 0;
  }

  get open(): boolean {
    return !this.closed;
  }

  prepare(source: string): DbStatement {
    return new PgStatement(this, source);
  }

  /** Run statements with no parameters (several may be separated by `;`: migrations). */
  exec(source: string): this {
    this.call(
      () => this.client.querySync(source),
      () => source === BEGIN || source === BEGIN_ROW_LOCKED || readsOnly(source),
    );
    return this;
  }

  /** SQLite's pragmas have no PostgreSQL form; `data_version`'s polls are LISTEN/NOTIFY there (commitSignal.ts). */
  pragma(source: string): never {
    throw new HostError(
      'STATE_UNAVAILABLE',
      `PRAGMA ${source} has no PostgreSQL equivalent (docs/scale-out.md §2; data_version: commitSignal.ts)`,
    );
  }

  transaction<F extends TransactionFn>(fn: F): DbTransaction<F> {
    const run = (self: unknown, args: unknown[], begin = BEGIN): ReturnType<F> => {
      if (this.depth === 0) {
        this.exec(begin);
        this.depth = 1;
        try {
          const value = fn.apply(self, args) as ReturnType<F>;
          if (value instanceof Promise) throw new TypeError('Transaction function cannot return a promise');
          this.committing = true;
          this.exec('COMMIT');
          return value;
        } catch (error) {
          this.rollback('ROLLBACK');
          throw error;
        } finally {
          this.depth = 0;
          this.committing = false;
        }
      }
      const savepoint = `paddock_sp${this.depth}`;
      this.exec(`SAVEPOINT ${savepoint}`);
      this.depth += 1;
      try {
        const value = fn.apply(self, args) as ReturnType<F>;
        this.exec(`RELEASE SAVEPOINT ${savepoint}`);
        return value;
      } catch (error) {
        this.rollback(`ROLLBACK TO SAVEPOINT ${savepoint}; RELEASE SAVEPOINT ${savepoint}`);
        throw error;
      } finally {
        this.depth -= 1;
      }
    };
    // Every PostgreSQL transaction takes the writer lock, deferred or not: READ COMMITTED gives a deferred
    // read-then-write none of the safety SQLite's single writer does (runnerState.ts's key cap, migrate.ts).
    const call = function (this: unknown, ...args: unknown[]) {
      return run(this, args);
    };
    const rowLocked = function (this: unknown, ...args: unknown[]) {
      return run(this, args, BEGIN_ROW_LOCKED);
    };
    return Object.assign(call, { deferred: call, immediate: call, rowLocked }) as unknown as DbTransaction<F>;
  }

  close(): this {
    if (!this.closed) {
      this.closed = true;
      release(this.client);
    }
    return this;
  }

  /** Run one translated statement (prepared on first use per connection) and return its rows and changed-row count. */
  execute(source: string, args: unknown[], arrayMode: boolean): { rows: unknown[]; changes: number } {
    let sql = this.translated.get(source);
    if (!sql) {
      sql = translateSql(source);
      this.translated.set(source, sql);
    }
    const { text, count } = sql;
    const values = layOut(sql, args);
    let sent = false;
    const once = () => {
      let name = this.prepared.get(source);
      if (!name) {
        name = `paddock_${this.prepared.size + 1}`;
        this.client.prepareSync(name, text, count);
        this.prepared.set(source, name);
      }
      this.client.arrayMode = arrayMode;
      try {
        sent = true;
        const rows = this.client.executeSync(name, values);
        return { rows, changes: Number(this.client.pq.cmdTuples() || 0) };
      } finally {
        this.client.arrayMode = false;
      }
    };
    // Lost while only preparing, nothing ran; lost after the statement was sent, only a read is sent again.
    return this.call(once, () => !sent || readsOnly(text));
  }

  private rollback(sql: string): void {
    try {
      this.exec(sql);
    } catch {
      // The connection is gone: the server rolled the transaction back itself.
    }
  }

  /**
   * One libpq call on a live connection (decision PH7). Outside a transaction a connection found gone (by
   * {@link alive}, or by the previous call) is replaced before anything is sent; one lost during `fn` is replaced and
   * `fn` run once more when `again()` says it cannot have been applied, else the loss is thrown and the next call gets
   * the new connection. Inside a transaction nothing is reopened: the server rolled it back, and each statement up to
   * its end fails. At most two connections are opened per call: never a loop.
   */
  private call<T>(fn: () => T, again: () => boolean): T {
    if (this.closed) throw new TypeError('The database connection is not open');
    if (this.depth > 0) {
      if (this.lost) throw this.lostError('transaction');
      return this.attempt(fn);
    }
    if (this.lost || !this.alive()) this.reopen();
    try {
      return this.attempt(fn);
    } catch (error) {
      if (!this.lost || !again()) throw error;
    }
    this.reopen();
    return this.attempt(fn);
  }

  /**
   * Whether the idle connection is still there, asked without a round trip: two reads that never block, the first
   * taking what the server sent while it was idle (a terminated backend's FATAL), the second finding its end.
   */
  private alive(): boolean {
    const { pq } = this.client;
    return pq.consumeInput() && pq.consumeInput() && pq.transactionStatus() !== CONNECTION_BAD;
  }

  /** Replace the lost connection, once; one that cannot be opened is a clear error, and the next call tries again. */
  private reopen(): void {
    this.lost = true;
    release(this.client);
    this.prepared.clear();
    try {
      this.client = this.connect();
    } catch (error) {
      const why = this.hide((error as Error).message).trim();
      throw new HostError(
        'STATE_UNAVAILABLE',
        `lost the connection to ${this.storeName()} and could not open a new one: ${why}`,
        { store: this.storeName() },
        { cause: new Error(why) },
      );
    }
    this.lost = false;
  }

  /**
   * `fn`, its libpq error shaped as SQLite's: PostgreSQL's SQLSTATE as `code` (`PG_23505`, …), as SQLite's errors
   * carry theirs, and the server's primary message as its message, as SQLite's is one line: libpq's full text adds
   * `ERROR:` and the DETAIL and CONTEXT lines, and a DETAIL quotes the row's values (`Key (id)=(…) already exists`),
   * which SQLite's messages never do. A failure that left the connection gone is a loss (`STATE_UNAVAILABLE`).
   */
  private attempt<T>(fn: () => T): T {
    try {
      return fn();
    } catch (error) {
      if (this.client.pq.transactionStatus() === CONNECTION_BAD) {
        this.lost = true;
        throw this.lostError(this.depth === 0 ? 'statement' : this.committing ? 'commit' : 'transaction', error);
      }
      const fields = this.client.pq.resultErrorFields();
      if (fields?.sqlState) Object.assign(error as object, { code: `PG_${fields.sqlState}`, fields });
      if (fields?.messagePrimary) (error as Error).message = fields.messagePrimary;
      throw error;
    }
  }

  private lostError(at: LossAt, cause?: unknown): HostError {
    const why = cause
      ? `: ${this.hide((cause as Error).message)
          .split('\n')[0]!
          .trim()}`
      : '';
    return new HostError(
      'STATE_UNAVAILABLE',
      `the connection to ${this.storeName()} was lost ${LOSS_OUTCOME[at]}; the next statement outside a ` +
        `transaction opens a new connection${why}`,
      { store: this.storeName(), lost: at },
      { cause },
    );
  }

  /** The store as a person may read it: the URL without its password (config/databaseUrl.ts). */
  private storeName(): string {
    try {
      return `the PostgreSQL store ${shownDatabaseUrl(this.url)}`;
    } catch {
      return 'the PostgreSQL store';
    }
  }

  /** `text` without the URL or its secrets (libpq's messages do not quote them, but nothing here relies on it). */
  private hide(text: string): string {
    try {
      return databaseUrlSecrets(this.url).reduce((t, secret) => t.split(secret).join('***'), text);
    } catch {
      return text;
    }
  }
}

/** A statement of {@link PgDb}: better-sqlite3's calls over one prepared PostgreSQL statement. */
class PgStatement implements DbStatement {
  private plucked = false;
  private rawRows = false;

  constructor(
    private readonly db: PgDb,
    private readonly source: string,
  ) {}

  run(...params: unknown[]): { changes: number } {
    return { changes: this.db.execute(this.source, params, false).changes };
  }

  get(...params: unknown[]): unknown {
    return this.all(...params)[0];
  }

  all(...params: unknown[]): unknown[] {
    const { rows } = this.db.execute(this.source, params, this.plucked || this.rawRows);
    return this.plucked ? (rows as unknown[][]).map((r) => r[0]) : rows;
  }

  iterate(...params: unknown[]): IterableIterator<unknown> {
    // Read whole, then iterated: a cursor (for `audit verify` over a large chain) is not built yet.
    return this.all(...params)[Symbol.iterator]();
  }

  pluck(toggle = true): this {
    this.plucked = toggle;
    if (toggle) this.rawRows = false;
    return this;
  }

  raw(toggle = true): this {
    this.rawRows = toggle;
    if (toggle) this.plucked = false;
    return this;
  }
}
