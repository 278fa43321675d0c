/**
 * Where a host's state lives — the data folder's SQLite file, or a PostgreSQL database — for the commands that read it
 * without opening the store (no migration, no recovery: `paddock doctor`, `paddock audit`).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { databaseUrlSecrets, shownDatabaseUrl } from '../config/databaseUrl.js';
import { HostError } from '../errors.js';
import { openDatabase, openDatabaseReadOnly, type Db } from './db.js';
import { builtinMigrations } from './migrate.js';
import { PgDb, type PgDbOptions } from './pg/pgDb.js';

/** The data folder, and the PostgreSQL URL when the state is there (`HostConfig` fits it). */
export interface StateLocation {
  dataDir: string;
  databaseUrl?: string;
}

/** How the state is named to a person: the SQLite file's path, or the URL without its password. */
export function describeState(where: StateLocation): string {
  return where.databaseUrl
    ? `PostgreSQL ${shownDatabaseUrl(where.databaseUrl)}`
    : `SQLite ${join(where.dataDir, 'paddock.db')}`;
}

/** `text` with the URL and its password taken out (a driver's message may quote the connection string). */
export function hideDatabaseUrl(where: StateLocation, text: string): string {
  if (!where.databaseUrl) return text;
  return databaseUrlSecrets(where.databaseUrl).reduce((t, secret) => t.split(secret).join('***'), text);
}

/**
 * Open the state read-only: the SQLite file (undefined when there is none yet), or a PostgreSQL connection whose every
 * transaction is read-only (`default_transaction_read_only`: a write is refused by the server, SQLSTATE 25006).
 */
export function openStateReadOnly(where: StateLocation): Db | undefined {
  if (!where.databaseUrl) {
    const file = join(where.dataDir, 'paddock.db');
    return existsSync(file) ? openDatabaseReadOnly(file) : undefined;
  }
  return openPg(where, { readOnly: true });
}

/** Open the state for one short write of a read-only command (`audit verify` records its verdict): never migrates. */
export function openStateForWrite(where: StateLocation): Db {
  return where.databaseUrl ? openPg(where) : openDatabase(join(where.dataDir, 'paddock.db'));
}

function openPg(where: StateLocation, options: PgDbOptions = {}): PgDb {
  try {
    return new PgDb(where.databaseUrl!, options);
  } catch (error) {
    const message = hideDatabaseUrl(where, (error as Error).message);
    throw new HostError('STATE_UNAVAILABLE', message, { state: describeState(where) }, { cause: error });
  }
}

/** What `paddock doctor` says of the state: which store, whether it answers, and whether its schema is this host's. */
export interface StateCheck {
  store: 'sqlite' | 'postgres';
  /** {@link describeState}'s words (never a password). */
  where: string;
  ok: boolean;
  /** Its schema version (undefined when it could not be read), and this host's. */
  version?: number;
  hostVersion: number;
  detail: string;
}

/** Check the state read-only: reachable, and migrated to this host's schema version (or about to be). */
export function checkState(where: StateLocation): StateCheck {
  const store = where.databaseUrl ? 'postgres' : 'sqlite';
  const hostVersion = Math.max(0, ...builtinMigrations(store).map((m) => m.version));
  const base = { store, where: describeState(where), hostVersion } as const;
  let db: Db | undefined;
  try {
    db = openStateReadOnly(where);
  } catch (error) {
    const why = hideDatabaseUrl(where, (error as Error).message)
      .replace(/\s+/g, ' ')
      .trim();
    return { ...base, ok: false, detail: `unreachable: ${why}` };
  }
  if (!db) return { ...base, ok: true, detail: 'no database yet (the first host start creates it)' };
  try {
    let version: number;
    try {
      version = db.prepare('SELECT coalesce(max(version), 0) FROM schema_migrations').pluck().get() as number;
    } catch {
      return { ...base, ok: false, detail: 'reachable, not migrated (no schema_migrations): a host start migrates it' };
    }
    if (version === hostVersion) return { ...base, ok: true, version, detail: `reachable, schema version ${version}` };
    if (version < hostVersion)
      return {
        ...base,
        ok: false,
        version,
        detail: `reachable, schema version ${version} of this host's ${hostVersion}: the next host start migrates it`,
      };
    return {
      ...base,
      ok: false,
      version,
      detail: `reachable, schema version ${version} is newer than this host's ${hostVersion}: upgrade paddock`,
    };
  } finally {
    db.close();
  }
}
