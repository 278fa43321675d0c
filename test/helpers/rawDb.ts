/**
 * Direct SQL on a store's database, for tests only: the host reaches its tables through
 * host/state/ alone (test/unit/state/sqlOwnership.test.ts), tests read and plant rows here.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { PgDb } from '../../host/state/pg/pgDb.js';
import { dbOf, type Store } from '../../host/state/store.js';
import { postgresUrlOf } from './storeBackends.js';

const connections = new WeakMap<Store, Database.Database>();
/** The PostgreSQL connections {@link rawDb} opened, for {@link closeRawDbs} (a cluster has a connection limit). */
const pgConnections: PgDb[] = [];

/**
 * A separate connection to the store's database (same data, its own connection; cached per store). Reads see what
 * the store committed; rows and triggers planted here are seen by the store. On a PostgreSQL store of a test backend
 * (storeBackends.ts) it is a PostgreSQL connection with the same calls; SQL that only SQLite speaks fails there.
 */
export function rawDb(store: Store): Database.Database {
  let db = connections.get(store);
  if (!db || !db.open) {
    const url = postgresUrlOf(store);
    if (url) {
      const pg = new PgDb(url);
      pgConnections.push(pg);
      db = pg as unknown as Database.Database;
    } else {
      db = new Database(join(store.dataDir, 'paddock.db'));
      db.pragma('busy_timeout = 5000');
    }
    connections.set(store, db);
  }
  return db;
}

/** Close every PostgreSQL connection {@link rawDb} opened (before the test cluster stops). */
export function closeRawDbs(): void {
  for (const db of pgConnections.splice(0)) db.close();
}

/**
 * The store's own connection, for what is per connection (pragmas such as `synchronous`, closing without a checkpoint).
 */
export function storeConnection(store: Store): Database.Database {
  // The SQLite store's connection is better-sqlite3's handle (the PostgreSQL adapter has no such pragmas).
  return dbOf(store) as Database.Database;
}

/**
 * Make the store's database refuse an insert into `table` whose new row matches `when` (SQL over `NEW`), with
 * `message`: a real refusal by the database in the middle of a transaction, on either store.
 */
export function refuseInserts(store: Store, table: string, when: string, message: string): void {
  if (postgresUrlOf(store)) {
    rawDb(store).exec(
      `CREATE FUNCTION refuse_${table}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF ${when} THEN ` +
        `RAISE EXCEPTION '${message}'; END IF; RETURN NEW; END $$; CREATE TRIGGER refuse_${table} BEFORE INSERT ON ` +
        `${table} FOR EACH ROW EXECUTE FUNCTION refuse_${table}()`,
    );
  } else {
    rawDb(store).exec(
      `CREATE TRIGGER refuse_${table} BEFORE INSERT ON ${table} WHEN ${when} BEGIN SELECT RAISE(ABORT, ` +
        `'${message}'); END`,
    );
  }
}

/** Run `sql` (an edit of audit rows) past the audit's append-only trigger, as whoever owns the tables could. */
export function editAuditPastTriggers(store: Store, sql: string): void {
  rawDb(store).exec(
    postgresUrlOf(store)
      ? `ALTER TABLE audit DISABLE TRIGGER audit_no_update; ${sql}; ALTER TABLE audit ENABLE TRIGGER audit_no_update`
      : `DROP TRIGGER audit_no_update; ${sql}`,
  );
}
