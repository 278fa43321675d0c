import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { HostError } from '../errors.js';

/** A prepared statement: the part of better-sqlite3's `Statement` that host/state/ uses. */
export interface DbStatement {
  /** Run a write; `changes` counts the rows it changed. */
  run(...params: unknown[]): { changes: number };
  /** The first row (or its first column after {@link pluck}), undefined when there is none. */
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  iterate(...params: unknown[]): IterableIterator<unknown>;
  /** Return each row's first column instead of the row. */
  pluck(toggle?: boolean): this;
  /** Return each row as an array of its columns. */
  raw(toggle?: boolean): this;
}

/** Any function a transaction wraps (better-sqlite3's own bound: its arguments are passed through untyped). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type TransactionFn = (...args: any[]) => unknown;
type ArgsOf<F> = F extends (...args: infer A) => unknown ? A : never;

/** A transaction function of {@link Db.transaction}: call it (deferred) or one of its modes. */
export interface DbTransaction<F extends TransactionFn> {
  (...args: ArgsOf<F>): ReturnType<F>;
  deferred(...args: ArgsOf<F>): ReturnType<F>;
  /** The writer's lock taken at BEGIN (SQLite `BEGIN IMMEDIATE`; PostgreSQL: docs/scale-out.md §3, PG2). */
  immediate(...args: ArgsOf<F>): ReturnType<F>;
  /**
   * PostgreSQL only: BEGIN without the writer lock (stage 2, docs/scale-out.md §3): the transaction locks the rows its
   * rules read itself. SQLite has no such mode (one writer per file): its callers use {@link immediate}.
   */
  rowLocked?(...args: ArgsOf<F>): ReturnType<F>;
}

/**
 * The store's connection: the part of better-sqlite3's `Database` that host/state/ uses, implemented by better-sqlite3
 * itself (the default) and by the PostgreSQL adapter (`pg/pgDb.ts`, docs/scale-out.md). Nothing outside host/state/
 * reaches it (`dbOf`).
 */
export interface Db {
  prepare(source: string): DbStatement;
  transaction<F extends TransactionFn>(fn: F): DbTransaction<F>;
  exec(source: string): unknown;
  pragma(source: string, options?: { simple?: boolean }): unknown;
  readonly inTransaction: boolean;
  readonly open: boolean;
  close(): unknown;
}

/** Which SQL a connection speaks: `sqlite` (better-sqlite3) or `postgres` (the adapter marks itself). */
export type Dialect = 'sqlite' | 'postgres';

/** The dialect of `db`, for the few statements written once per dialect (docs/scale-out.md §2). */
export function dialectOf(db: Db): Dialect {
  return (db as { dialect?: Dialect }).dialect ?? 'sqlite';
}

/** `normal`: durable against a host crash; `full`: also against power loss (about 4× slower commits). */
export type Durability = 'normal' | 'full';

/**
 * Open (or create) the state database in WAL mode. A file that is not a database, is corrupt,
 * or stays locked by another writer fails with a HostError that says which, never a half-open
 * handle.
 */
export function openDatabase(path: string, durability: Durability = 'normal'): Db {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  let db: Db | undefined;
  try {
    db = new Database(path);
    // The host's alone: the data folder may be group-searchable by the run identity (docs/admin-guide.md "Run
    // identity").
    if (path !== ':memory:')
      for (const file of [path, `${path}-wal`, `${path}-shm`]) if (existsSync(file)) chmodSync(file, 0o600);
    db.pragma('busy_timeout = 5000');
    const mode = db.pragma('journal_mode = WAL', { simple: true });
    if (path !== ':memory:' && mode !== 'wal') throw new Error(`journal_mode is ${String(mode)}, WAL needed`);
    db.pragma(`synchronous = ${durability === 'full' ? 'FULL' : 'NORMAL'}`);
    db.pragma('foreign_keys = ON');
    // Deleted and overwritten content is zeroed in the file, not left in free space: the store holds secrets
    // (webhook signing secrets) that removal must erase (docs/security-model.md, "Webhooks").
    db.pragma('secure_delete = ON');
    // No integrity scan here: it costs O(size) at every start (1.4 s at 1M events). A file that is
    // not a database fails on the first pragma above; damage inside one fails the query that meets it.
    db.prepare('SELECT count(*) FROM sqlite_master').get();
    return db;
  } catch (error) {
    db?.close();
    throw describeOpenError(path, error);
  }
}

function describeOpenError(path: string, error: unknown): HostError {
  const code = (error as { code?: string }).code ?? '';
  const message = (error as Error).message;
  if (code === 'SQLITE_NOTADB' || code.startsWith('SQLITE_CORRUPT')) {
    return new HostError(
      'STATE_CORRUPT',
      `state database ${path} is corrupt or not a database (${message}); restore it from a backup or move it away`,
      { path, code },
      { cause: error },
    );
  }
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) {
    return new HostError(
      'STATE_LOCKED',
      `state database ${path} is locked by another process (${message})`,
      { path, code },
      { cause: error },
    );
  }
  return new HostError(
    'STATE_UNAVAILABLE',
    `cannot open state database ${path}: ${message}`,
    { path, code },
    { cause: error },
  );
}

/** Open an existing state database read-only (no migration, no WAL set-up): `paddock audit`, `paddock doctor`. */
export function openDatabaseReadOnly(path: string): Db {
  return new Database(path, { readonly: true, fileMustExist: true });
}
