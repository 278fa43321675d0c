import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Store, type StoreOptions } from '../../host/state/store.js';
import { startPgCluster, type PgCluster } from './pgCluster.js';

const require = createRequire(import.meta.url);
type Native = { connectSync(url: string): void; querySync(sql: string): unknown[]; end(): void };

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
      const Client = require('pg-native') as new () => Native;
      const admin = new Client();
      admin.connectSync(cluster.url);
      admin.querySync(`CREATE DATABASE ${name}`);
      admin.end();
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
