import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { HostError } from '../../../host/errors.js';
import { builtinMigrations, migrate } from '../../../host/state/migrate.js';
import { Store } from '../../../host/state/store.js';
import { stateScope } from '../../../host/state/runnerState.js';
import { ErrorCodes } from '../../../sdk/protocol/errorCodes.js';
import { RpcError } from '../../../sdk/protocol/rpcError.js';
import { textEvent } from '../../../sdk/protocol/runParams.js';
import { tempStore } from '../../helpers/store.js';
import { rawDb, storeConnection } from '../../helpers/rawDb.js';

const codeOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return e instanceof HostError || e instanceof RpcError ? e.code : String(e);
  }
  return 'no error';
};

describe('state store', () => {
  it('opens a WAL database, applies migrations once, keeps the audit key 0600', () => {
    const { store, dataDir } = tempStore();
    expect(storeConnection(store).pragma('journal_mode', { simple: true })).toBe('wal');
    expect(rawDb(store).prepare('SELECT version FROM schema_migrations').pluck().all()).toEqual(
      builtinMigrations().map((m) => m.version),
    );
    expect(statSync(join(dataDir, 'keys/audit-ed25519.pem')).mode & 0o777).toBe(0o600);
    // The database and its WAL are the host's alone (the data folder may be group-searchable by the run uid).
    for (const file of ['paddock.db', 'paddock.db-wal']) expect(statSync(join(dataDir, file)).mode & 0o777).toBe(0o600);
    store.close();
    const again = Store.open({ dataDir });
    expect(rawDb(again).prepare("SELECT count(*) FROM audit WHERE type = 'state.migrated'").pluck().get()).toBe(1);
    again.close();
  });

  it('durability full makes every commit fsync (synchronous = FULL); normal is the default', () => {
    const { dataDir, store } = tempStore();
    expect(storeConnection(store).pragma('synchronous', { simple: true })).toBe(1); // NORMAL
    store.close();
    const full = Store.open({ dataDir, durability: 'full' });
    expect(storeConnection(full).pragma('synchronous', { simple: true })).toBe(2); // FULL
    full.close();
  });

  it('appends events with gap-free seqs per session and reads from any seq', () => {
    const { store } = tempStore();
    const a = store.ensureSession('default', 'b1', 'cli:x:1').sessionId;
    const b = store.ensureSession('default', 'b1', 'cli:x:2').sessionId;
    expect(store.ensureSession('default', 'b1', 'cli:x:1')).toEqual({ sessionId: a, created: false });
    store.append(a, [{ type: 'message.received', data: { event: textEvent('hi') } }]);
    store.append(b, [{ type: 'message.received', data: { event: textEvent('yo') } }]);
    store.append(a, [
      { type: 'run.queued', runId: 'run_1', data: { runner: 'echo', goalRevision: 0, attempt: 1 } },
      { type: 'run.started', runId: 'run_1', data: { pid: 1234, pidStart: 5, recoveryDelivered: [] } },
    ]);
    expect(store.readEvents(a).map((e) => [e.seq, e.type])).toEqual([
      [1, 'session.created'],
      [2, 'message.received'],
      [3, 'run.queued'],
      [4, 'run.started'],
    ]);
    expect(store.readEvents(a, 2).map((e) => e.seq)).toEqual([3, 4]);
    expect(store.readEvents(b).map((e) => e.seq)).toEqual([1, 2]);
    expect(store.run('run_1')).toMatchObject({ status: 'running', pid: 1234, runnerId: 'echo' });
  });

  it('a multi-event append is atomic: an invalid event rolls back the whole batch', () => {
    const { store } = tempStore();
    const s = store.ensureSession('default', 'b', 'k').sessionId;
    expect(() =>
      store.append(s, [
        { type: 'run.queued', runId: 'run_2', data: { runner: 'echo', goalRevision: 0, attempt: 1 } },
        { type: 'run.started', runId: 'run_2', data: { pid: -1 } as never },
      ]),
    ).toThrow(/invalid run.started event: pid/);
    expect(store.readEvents(s).map((e) => e.type)).toEqual(['session.created']);
    expect(store.run('run_2')).toBeUndefined();
    const auditCount = rawDb(store).prepare('SELECT count(*) FROM audit').pluck().get();
    store.append(s, [
      {
        type: 'run.queued',
        runId: 'run_2',
        data: { runner: 'echo', goalRevision: 0, attempt: 1 },
        audit: { type: 'run.queued', actor: 'host', data: {} },
      },
    ]);
    expect(rawDb(store).prepare('SELECT count(*) FROM audit').pluck().get()).toBe((auditCount as number) + 1);
  });

  it('a listener that throws after COMMIT does not turn the committed transaction into an error', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'paddock-state-'));
    const reported: { error: string; type: string }[] = [];
    const store = Store.open({
      dataDir,
      onListenerError: (error, event) => reported.push({ error: String(error), type: event.type }),
    });
    const heard: string[] = [];
    store.subscribe(() => {
      throw new Error('listener bug');
    });
    store.subscribe((e) => heard.push(e.type));
    // The caller sees its committed result, not the listener's error ...
    const { sessionId } = store.ensureSession('default', 'b', 'c');
    const stored = store.append(sessionId, [{ type: 'message.received', data: { event: textEvent('a') } }]);
    expect(stored.map((e) => e.type)).toEqual(['message.received']);
    expect(store.readEvents(sessionId).map((e) => e.type)).toEqual(['session.created', 'message.received']);
    // ... the other listeners still hear every event, and the failure is reported, once per event.
    expect(heard).toEqual(['session.created', 'message.received']);
    expect(reported).toEqual([
      { error: 'Error: listener bug', type: 'session.created' },
      { error: 'Error: listener bug', type: 'message.received' },
    ]);
    store.close();
  });

  it('listeners hear about events only after the outermost commit, never about rolled-back ones', () => {
    const { store } = tempStore();
    const heard: string[] = [];
    store.subscribe((e) => heard.push(e.type));
    expect(() =>
      store.transaction(() => {
        store.ensureSession('default', 'b', 'rolled-back');
        expect(heard).toEqual([]); // not yet committed
        throw new Error('abort the outer transaction');
      }),
    ).toThrow('abort');
    expect(heard).toEqual([]);
    const s = store.transaction(() => {
      const id = store.ensureSession('default', 'b', 'kept').sessionId;
      try {
        store.append(id, [
          { type: 'message.received', data: { event: textEvent('a') } },
          { type: 'run.started', runId: 'r', data: { pid: 0 } as never },
        ]);
      } catch {
        // the inner savepoint rolled back; the outer transaction carries on
      }
      return id;
    });
    expect(heard).toEqual(['session.created']);
    expect(store.readEvents(s).map((e) => e.type)).toEqual(['session.created']);
  });

  it('events and audit records cannot be updated or deleted through SQL', () => {
    const { store } = tempStore();
    store.ensureSession('default', 'b', 'k');
    expect(() => rawDb(store).exec("UPDATE events SET type = 'x'")).toThrow(/append-only/);
    expect(() => rawDb(store).exec('DELETE FROM events')).toThrow(/append-only/);
    expect(() => rawDb(store).exec('DELETE FROM audit')).toThrow(/append-only/);
  });

  it('runner state is scoped, JSON, and capped', () => {
    const { store } = tempStore();
    const mine = stateScope('b1', 's1', 'session');
    const other = stateScope('b1', 's2', 'session');
    store.runnerState.set(mine, 'k', { n: [1, 'two', null] });
    expect(store.runnerState.get(mine, 'k')).toEqual({ found: true, value: { n: [1, 'two', null] } });
    expect(store.runnerState.get(other, 'k')).toEqual({ found: false });
    expect(store.runnerState.get(stateScope('b1', 's1', 'binding'), 'k')).toEqual({ found: false });
    expect(codeOf(() => store.runnerState.set(mine, 'big', 'x'.repeat(70_000)))).toBe(ErrorCodes.QuotaExceeded);
    for (let i = 0; i < 999; i++) store.runnerState.set(mine, `k${i}`, i);
    expect(codeOf(() => store.runnerState.set(mine, 'one-too-many', 1))).toBe(ErrorCodes.QuotaExceeded);
    store.runnerState.set(mine, 'k1', 'overwrite is fine at the cap');
    expect(store.runnerState.delete(mine, 'k1')).toBe(true);
    expect(store.runnerState.delete(mine, 'k1')).toBe(false);
  });
});

describe('state database failures give a clear error and change nothing', () => {
  it('a file that is not a database → STATE_CORRUPT', () => {
    const { dataDir, store } = tempStore();
    store.close();
    writeFileSync(join(dataDir, 'paddock.db'), 'this is not sqlite at all, just text '.repeat(200));
    for (const f of ['paddock.db-wal', 'paddock.db-shm']) writeFileSync(join(dataDir, f), '');
    const error = (() => {
      try {
        Store.open({ dataDir });
      } catch (e) {
        return e as HostError;
      }
    })();
    expect(error?.code).toBe('STATE_CORRUPT');
    expect(error?.message).toMatch(/paddock\.db is corrupt or not a database/);
  });

  it('a database locked by another writer → STATE_LOCKED', () => {
    const { dataDir, store } = tempStore();
    store.close();
    const other = new Database(join(dataDir, 'paddock.db'));
    other.pragma('locking_mode = EXCLUSIVE');
    other.exec('BEGIN EXCLUSIVE');
    try {
      expect(codeOf(() => Store.open({ dataDir }))).toBe('STATE_LOCKED');
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
  }, 20_000);

  it('a failing migration rolls back completely and names itself; the database is unchanged', () => {
    const db = new Database(':memory:');
    const good = { version: 1, name: 'good', sql: 'CREATE TABLE a (x INTEGER);' };
    const bad = { version: 2, name: 'bad', sql: 'CREATE TABLE b (y INTEGER); INSERT INTO nope VALUES (1);' };
    migrate(db, [good]);
    const error = (() => {
      try {
        migrate(db, [good, bad]);
      } catch (e) {
        return e as HostError;
      }
    })();
    expect(error?.code).toBe('MIGRATION_FAILED');
    expect(error?.message).toMatch(/migration 2 \(bad\) failed and was rolled back: no such table: nope/);
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'b'").get()).toBeUndefined();
    expect(db.prepare('SELECT version FROM schema_migrations').pluck().all()).toEqual([1]);
  });

  it('a database from a newer paddock is refused', () => {
    const db = new Database(':memory:');
    migrate(db, [
      { version: 1, name: 'a', sql: 'SELECT 1;' },
      { version: 7, name: 'future', sql: 'SELECT 1;' },
    ]);
    expect(codeOf(() => migrate(db, [{ version: 1, name: 'a', sql: 'SELECT 1;' }]))).toBe('MIGRATION_FAILED');
  });
});
