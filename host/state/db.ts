import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { HostError } from '../errors.js';

/** A better-sqlite3 handle. */
export type Db = Database.Database;

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
