/**
 * Direct SQL on a store's database, for tests only: the host reaches its tables through
 * host/state/ alone (test/unit/state/sqlOwnership.test.ts), tests read and plant rows here.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { dbOf, type Store } from '../../host/state/store.js';

const connections = new WeakMap<Store, Database.Database>();

/**
 * A separate connection to the store's database file (same data, its own connection; cached per
 * store). Reads see what the store committed; rows and triggers planted here are seen by the store.
 */
export function rawDb(store: Store): Database.Database {
  let db = connections.get(store);
  if (!db || !db.open) {
    db = new Database(join(store.dataDir, 'paddock.db'));
    db.pragma('busy_timeout = 5000');
    connections.set(store, db);
  }
  return db;
}

/**
 * The store's own connection, for what is per connection (pragmas such as `synchronous`, closing without a checkpoint).
 */
export function storeConnection(store: Store): Database.Database {
  // The SQLite store's connection is better-sqlite3's handle (the PostgreSQL adapter has no such pragmas).
  return dbOf(store) as Database.Database;
}
