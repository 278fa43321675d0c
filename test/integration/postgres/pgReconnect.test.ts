// The synchronous store connection replaced when it is lost (host/state/pg/pgDb.ts, decision PH7), on a real cluster
// whose backends are ended with pg_terminate_backend. Outside a transaction: a connection found gone is replaced
// before anything is sent, a read lost while it ran is sent again, a write lost while it ran is not (it may have been
// applied) and says so; the new connection gets the first one's settings. Inside a transaction: it fails as rolled
// back (at COMMIT: outcome unknown), nothing is reopened until it ends. A connection that cannot be opened again is a
// clear error naming the store without its password, and the next statement tries again.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgDb, STORE_APPLICATION_NAME } from '../../../host/state/pg/pgDb.js';
import { startPgCluster, type PgCluster } from '../../helpers/pgCluster.js';

let cluster: PgCluster;
let admin: PgDb;

beforeAll(() => {
  cluster = startPgCluster();
  admin = new PgDb(cluster.url);
  admin.exec('CREATE SCHEMA reconnect; CREATE TABLE reconnect.t (x int); CREATE ROLE reopens LOGIN SUPERUSER');
});

afterAll(() => {
  admin?.close();
  cluster?.stop();
});

/** The URL of the test's schema (set by the URL's options, as the contract suite's stores are). */
const schemaUrl = () => `${cluster.url}&options=-csearch_path%3Dreconnect`;

/** End `pid`'s backend and wait (synchronously: nothing of `db` may notice meanwhile) until the server has. */
function terminate(pid: number): void {
  expect(admin.prepare('SELECT pg_terminate_backend(?)').pluck().get(pid)).toBe(1);
  const gone = admin.prepare('SELECT count(*) FROM pg_stat_activity WHERE pid = ?').pluck();
  for (const until = Date.now() + 10_000; gone.get(pid) !== 0;)
    if (Date.now() > until) throw new Error(`backend ${pid} is still there 10 s after pg_terminate_backend`);
}

const rows = () => admin.prepare('SELECT count(*) FROM reconnect.t').pluck().get() as number;

/** A statement of `db` that `pg_terminate_backend` ends while it runs: a second (async) connection waits for it. */
async function terminatedWhileRunning(db: PgDb, run: () => unknown): Promise<unknown> {
  const killer = new pg.Client({ connectionString: cluster.url });
  await killer.connect();
  try {
    // Server-side: wait until db's backend runs a statement, then end it (the test process is blocked meanwhile).
    const killed = killer.query(`DO $$ BEGIN
      FOR i IN 1..2000 LOOP
        PERFORM pg_stat_clear_snapshot();
        PERFORM pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = ${db.backendPid} AND state = 'active';
        EXIT WHEN FOUND;
        PERFORM pg_sleep(0.005);
      END LOOP;
    END $$`);
    let thrown: unknown;
    try {
      run();
    } catch (error) {
      thrown = error;
    }
    await killed;
    return thrown;
  } finally {
    await killer.end();
  }
}

describe('PgDb when its connection is lost', () => {
  beforeAll(() => admin.exec('TRUNCATE reconnect.t'));

  it('outside a transaction: found gone before anything is sent, replaced with the same settings', () => {
    const db = new PgDb(schemaUrl(), { readOnly: true });
    try {
      const first = db.backendPid;
      expect(db.prepare('SELECT current_setting(?)').pluck().get('application_name')).toBe(STORE_APPLICATION_NAME);
      terminate(first);
      // A read and a refused write both run on a new connection: read-only, its search_path and name kept.
      expect(db.prepare('SELECT count(*) FROM t').pluck().get()).toBe(0);
      expect(db.backendPid).not.toBe(first);
      expect(db.connections).toBe(2);
      expect(() => db.prepare('INSERT INTO t VALUES (1)').run()).toThrow(/read-only transaction/);
      const settings = db.prepare("SELECT current_setting('application_name') AS name, current_schema() AS schema");
      expect(settings.get()).toEqual({ name: STORE_APPLICATION_NAME, schema: 'reconnect' });
    } finally {
      db.close();
    }
    // A write outside a transaction on a connection found gone is sent once, on the new connection.
    const writer = new PgDb(schemaUrl());
    try {
      terminate(writer.backendPid);
      expect(writer.prepare('INSERT INTO t VALUES (1)').run().changes).toBe(1);
      expect(rows()).toBe(1);
      // So is a transaction: its BEGIN found the connection gone and opened another.
      terminate(writer.backendPid);
      writer.transaction(() => writer.prepare('INSERT INTO t VALUES (2)').run())();
      expect(rows()).toBe(2);
      expect(writer.connections).toBe(3);
    } finally {
      writer.close();
    }
  });

  it('outside a transaction: a read lost while it ran is sent again; a write is not, and says so', async () => {
    admin.exec('TRUNCATE reconnect.t');
    const db = new PgDb(schemaUrl());
    try {
      let answer: unknown;
      const readError = await terminatedWhileRunning(db, () => {
        answer = db.prepare('SELECT 7 AS n FROM pg_sleep(?)').pluck().get(0.5);
      });
      expect(readError).toBeUndefined();
      expect(answer).toBe(7);
      expect(db.connections).toBe(2);

      const writeError = await terminatedWhileRunning(db, () =>
        db.prepare('INSERT INTO t SELECT 1 FROM pg_sleep(?)').run(0.5),
      );
      expect(writeError).toMatchObject({ code: 'STATE_UNAVAILABLE', data: { lost: 'statement' } });
      const message = (writeError as Error).message;
      expect(message).toMatch(
        /^the connection to the PostgreSQL store postgresql:\/\/\S+ was lost during a statement /,
      );
      expect(message).toContain('outside a transaction (a write may or may not have been applied); the next statement');
      expect(db.connections).toBe(2); // not sent again: only the next statement opens one
      expect(rows()).toBe(0);
      expect(db.prepare('INSERT INTO t VALUES (1)').run().changes).toBe(1);
      expect(db.connections).toBe(3);
      expect(rows()).toBe(1);
    } finally {
      db.close();
    }
  });

  it('inside a transaction: it fails as rolled back, nothing is reopened until it ends', () => {
    admin.exec('TRUNCATE reconnect.t');
    const db = new PgDb(schemaUrl());
    try {
      const insert = db.prepare('INSERT INTO t VALUES (?)');
      const inside: unknown[] = [];
      const failed = (() => {
        try {
          db.transaction(() => {
            insert.run(1);
            terminate(db.backendPid);
            for (const x of [2, 3])
              try {
                insert.run(x);
              } catch (error) {
                inside.push(error); // caught by the closure: the next statement still fails, never reopens
              }
            expect(db.connections).toBe(1);
          })();
        } catch (error) {
          return error;
        }
      })();
      expect(inside).toHaveLength(2);
      for (const error of inside) expect(error).toMatchObject({ data: { lost: 'transaction' } });
      expect((inside[0] as Error).message).toContain(
        'was lost inside a transaction (the server rolled it back: nothing of it was written)',
      );
      expect(failed).toMatchObject({ code: 'STATE_UNAVAILABLE', data: { lost: 'transaction' } });
      expect(rows()).toBe(0);
      // The next transaction runs on a new connection.
      db.transaction(() => insert.run(4))();
      expect(db.connections).toBe(2);
      expect(rows()).toBe(1);

      // Lost before COMMIT was sent: COMMIT is where it shows, and there its outcome is not known.
      let committed: unknown;
      try {
        db.transaction(() => {
          insert.run(5);
          terminate(db.backendPid);
        })();
      } catch (error) {
        committed = error;
      }
      expect(committed).toMatchObject({ code: 'STATE_UNAVAILABLE', data: { lost: 'commit' } });
      expect((committed as Error).message).toContain('at COMMIT (the transaction may or may not have been committed)');
      expect(rows()).toBe(1);
      expect(db.prepare('SELECT count(*) FROM t').pluck().get()).toBe(1);
      expect(db.connections).toBe(3);
    } finally {
      db.close();
    }
  });

  it('one that cannot be opened again is a clear error naming the store, never its password; then tried again', () => {
    const password = 'Rec0nnect-pa55word';
    const url = `${cluster.url.replace('user=postgres', 'user=reopens')}&password=${password}`;
    const db = new PgDb(url);
    try {
      admin.exec('ALTER ROLE reopens NOLOGIN');
      terminate(db.backendPid);
      let error: unknown;
      try {
        db.prepare('SELECT 1').get();
      } catch (e) {
        error = e;
      }
      expect(error).toMatchObject({ code: 'STATE_UNAVAILABLE' });
      const message = (error as Error).message;
      expect(message).toMatch(
        /^lost the connection to the PostgreSQL store postgresql:\/\/\S+ and could not open a new/,
      );
      expect(message).toContain('password=***');
      expect(message).toContain('"reopens" is not permitted to log in');
      expect(`${message} ${String((error as Error).cause)} ${JSON.stringify(error)}`).not.toContain(password);
      // Once per statement, never a loop: the role may log in again, and the next statement gets its connection.
      expect(db.connections).toBe(1);
      admin.exec('ALTER ROLE reopens LOGIN');
      expect(db.prepare('SELECT 1 AS one').pluck().get()).toBe(1);
      expect(db.connections).toBe(2);
    } finally {
      admin.exec('ALTER ROLE reopens LOGIN');
      db.close();
    }
  });
});
