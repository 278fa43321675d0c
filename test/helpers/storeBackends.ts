import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { PgDb, pgClientsReleased } from '../../host/state/pg/pgDb.js';
import { Store, type StoreOptions } from '../../host/state/store.js';
import { startPgCluster, type PgCluster } from './pgCluster.js';

/** One store implementation the contract suite runs against (docs/scale-out.md, "Contract tests"). */
export interface StoreBackend {
  name: 'sqlite' | 'postgres';
  /** A new, empty store's options: its own data folder, and on PostgreSQL its own schema. */
  fresh(): { dataDir: string; databaseUrl?: string };
  open(options: { dataDir: string; databaseUrl?: string } & Partial<StoreOptions>): Store;
  /** Close every store {@link open} opened that is still open, and tear down what {@link fresh} made. */
  close(): void;
}

/** The PostgreSQL URL each store of {@link postgresBackend} was opened with (a test's second connection). */
const urls = new WeakMap<Store, string>();

/** The PostgreSQL URL `store` was opened with by a test backend, or undefined (a SQLite store). */
export function postgresUrlOf(store: Store): string | undefined {
  return urls.get(store);
}

/** The embedded SQLite store: a data folder per store. */
export function sqliteBackend(): StoreBackend {
  const dirs: string[] = [];
  const stores: Store[] = [];
  return {
    name: 'sqlite',
    fresh: () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'paddock-contract-'));
      dirs.push(dataDir);
      return { dataDir };
    },
    open: (options) => {
      const store = Store.open(options);
      stores.push(store);
      return store;
    },
    close: () => {
      for (const store of stores.splice(0)) store.close();
      dirs.forEach((d) => rmSync(d, { recursive: true, force: true }));
    },
  };
}

/**
 * The PostgreSQL store on a throwaway cluster (started on first use; a missing PostgreSQL fails, never skips): a
 * schema per store (the URL sets its search_path: every table, trigger and function of the migrations lands there;
 * cheaper than a database per store, which property tests open by the dozen), and a data folder for its audit key.
 */
export function postgresBackend(): StoreBackend {
  let cluster: PgCluster | undefined;
  let schemas = 0;
  const dirs: string[] = [];
  const stores: Store[] = [];
  return {
    name: 'postgres',
    fresh: () => {
      cluster ??= startPgCluster();
      const schema = `store_${++schemas}`;
      // Through PgDb, whose close keeps libpq's client alive until libuv has closed its watcher (pgDb.ts).
      new PgDb(cluster.url).exec(`CREATE SCHEMA ${schema}`).close();
      const dataDir = mkdtempSync(join(tmpdir(), 'paddock-contract-pg-'));
      dirs.push(dataDir);
      return { dataDir, databaseUrl: `${cluster.url}&options=-csearch_path%3D${schema}` };
    },
    open: (options) => {
      const store = Store.open(options);
      stores.push(store);
      if (options.databaseUrl) urls.set(store, options.databaseUrl);
      return store;
    },
    close: () => {
      for (const store of stores.splice(0)) store.close();
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
  afterAll(async () => {
    for (const s of open) if (!s.isClosed) s.close();
    backend.close();
    await pgClientsReleased(); // the worker exits next: not while a pg-native client is still closing
  });
  const again = (options: { dataDir: string; databaseUrl?: string } & Partial<StoreOptions>) => {
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
