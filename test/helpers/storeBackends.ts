import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { PgDb } from '../../host/state/pg/pgDb.js';
import { Store, type StoreOptions } from '../../host/state/store.js';
import { startPgCluster, type PgCluster } from './pgCluster.js';

/** One store implementation the contract suite runs against (docs/scale-out.md, "Contract tests"). */
export interface StoreBackend {
  name: 'sqlite' | 'postgres';
  /** A new, empty store's options: its own data folder, and on PostgreSQL its own database. */
  fresh(): { dataDir: string; databaseUrl?: string };
  open(options: { dataDir: string; databaseUrl?: string } & Partial<StoreOptions>): Store;
  /** Tear down what {@link fresh} made. */
  close(): void;
}

/** The embedded SQLite store: a data folder per store. */
export function sqliteBackend(): StoreBackend {
  const dirs: string[] = [];
  return {
    name: 'sqlite',
    fresh: () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'paddock-contract-'));
      dirs.push(dataDir);
      return { dataDir };
    },
    open: (options) => Store.open(options),
    close: () => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })),
  };
}

/**
 * The PostgreSQL store on a throwaway cluster (started on first use; a missing PostgreSQL fails, never skips): a
 * database per store, and a data folder for its audit key.
 */
export function postgresBackend(): StoreBackend {
  let cluster: PgCluster | undefined;
  let databases = 0;
  const dirs: string[] = [];
  return {
    name: 'postgres',
    fresh: () => {
      cluster ??= startPgCluster();
      const name = `contract_${++databases}`;
      // Through PgDb, whose close keeps libpq's client alive until libuv has closed its watcher (pgDb.ts).
      new PgDb(cluster.url).exec(`CREATE DATABASE ${name}`).close();
      const dataDir = mkdtempSync(join(tmpdir(), 'paddock-contract-pg-'));
      dirs.push(dataDir);
      return { dataDir, databaseUrl: cluster.url.replace('/paddock?', `/${name}?`) };
    },
    open: (options) => Store.open(options),
    close: () => {
      cluster?.stop();
      dirs.forEach((d) => rmSync(d, { recursive: true, force: true }));
    },
  };
}

/**
 * The stores a test file opens on `backend`: `fresh()` a new empty one, `again(options)` one more connection to it;
 * every store still open is closed, and the backend torn down, after the file's tests.
 */
export function storesOf(backend: StoreBackend) {
  const open: Store[] = [];
  afterAll(() => {
    for (const s of open) if (!s.isClosed) s.close();
    backend.close();
  });
  const again = (options: { dataDir: string; databaseUrl?: string }) => {
    const store = backend.open(options);
    open.push(store);
    return store;
  };
  return {
    fresh: () => {
      const options = backend.fresh();
      return { store: again(options), options };
    },
    again,
  };
}
