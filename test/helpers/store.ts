import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, it } from 'vitest';
import { Store } from '../../host/state/store.js';
import { pgClientsReleased } from '../../host/state/pg/pgDb.js';
import { closeRawDbs } from './rawDb.js';
import { postgresUrlOf, type StoreBackend } from './storeBackends.js';

/** The backend {@link tempStore} opens, when a suite runs on another store than SQLite ({@link onStoreBackend}). */
let backend: StoreBackend | undefined;

/** A store in a fresh temporary data folder (a real SQLite file; a PostgreSQL store under {@link onStoreBackend}). */
export function tempStore(): { store: Store; dataDir: string } {
  if (backend) {
    const options = backend.fresh();
    return { store: backend.open(options), dataDir: options.dataDir };
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'paddock-state-'));
  return { store: Store.open({ dataDir }), dataDir };
}

/** Which store {@link tempStore} opens: what a suite run on both stores checks where they differ by design. */
export function tempStoreKind(): 'sqlite' | 'postgres' {
  return backend?.name ?? 'sqlite';
}

/** The options that open `store`'s database again (a second connection, another process): its folder and URL. */
export function sameStore(store: Store): { dataDir: string; databaseUrl?: string } {
  const databaseUrl = postgresUrlOf(store);
  return { dataDir: store.dataDir, ...(databaseUrl ? { databaseUrl } : {}) };
}

/**
 * `it` for a test of what only the SQLite store has (its query plans, pragmas, its file, `data_version`): registered
 * where {@link tempStore} opens SQLite, not in a run of the suite on PostgreSQL, whose forms of these are other tests'.
 */
export function itOnSqlite(name: string, fn: () => unknown, timeout?: number): void {
  if (tempStoreKind() === 'sqlite') it(name, fn, timeout);
}

/**
 * Register an existing suite's tests with {@link tempStore} opening `b`'s stores: `load` imports the suite's file
 * (its `describe`/`it` calls register here, in the importing file), so a unit suite written for SQLite runs on
 * PostgreSQL unchanged (test/integration/postgres/). The suite's tests run after this returns; the backend stays set
 * for them, and is torn down after the file's last test (this hook is registered first, so it runs after the suite's
 * own).
 */
export async function onStoreBackend(b: StoreBackend, load: () => Promise<unknown>): Promise<void> {
  backend = b;
  afterAll(async () => {
    closeRawDbs();
    b.close();
    await pgClientsReleased(); // the worker exits next: not while a pg-native client is still closing
  });
  await load();
}
