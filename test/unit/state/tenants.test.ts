// Migration 6 (tenants) on a database holding data, and the tenant-keyed session and dedupe tables
// (docs/state.md, "Tenants"). Real SQLite files.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HostError } from '../../../host/errors.js';
import { openDatabase, type Db } from '../../../host/state/db.js';
import { findDelivery, recordDelivery } from '../../../host/state/dispatchLog.js';
import { builtinMigrations, migrate } from '../../../host/state/migrate.js';
import { Store } from '../../../host/state/store.js';
import { sessionsOfTenant, tenantOfRun, tenantOfSession } from '../../../host/state/tenancy.js';
import { tempStore } from '../../helpers/store.js';
import { rawDb } from '../../helpers/rawDb.js';

const before6 = () => builtinMigrations().filter((m) => m.version < 6);

/** A data folder whose database is at version 5 and holds sessions, events, runs, a claim, deliveries and config. */
function version5Folder(): string {
  const dataDir = mkdtempSync(join(tmpdir(), 'paddock-tenants-'));
  const db = openDatabase(join(dataDir, 'paddock.db'));
  migrate(db, before6());
  const at = '2026-01-01T00:00:00.000Z';
  const event = db.prepare(
    'INSERT INTO events (session_id, seq, id, type, run_id, at, data) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  for (const s of ['ses_1', 'ses_2']) {
    db.prepare(
      'INSERT INTO sessions (id, binding_id, conversation_key, created_at, paused_reason) VALUES (?, ?, ?, ?, ?)',
    ).run(s, 'b', `k-${s}`, at, s === 'ses_2' ? 'paused by test' : null);
    event.run(
      s,
      1,
      `evt_${s}_1`,
      'session.created',
      null,
      at,
      JSON.stringify({ bindingId: 'b', conversationKey: `k-${s}` }),
    );
    event.run(
      s,
      2,
      `evt_${s}_2`,
      'run.queued',
      `run_${s}`,
      at,
      JSON.stringify({ runner: 'echo', goalRevision: 0, attempt: 1 }),
    );
    db.prepare(
      'INSERT INTO runs (id, session_id, runner_id, status, queued_at, last_seq, binding_id, queued_seq) ' +
        "VALUES (?, ?, 'echo', 'queued', ?, 2, 'b', 2)",
    ).run(`run_${s}`, s, at);
    db.prepare(
      'INSERT INTO dispatched_events (platform, bot, event_id, binding_id, session_id, run_id, at) ' +
        'VALUES (?, ?, ?, ?, ?, ?, ?)',
    ).run('telegram', 'bot', `e-${s}`, 'b', s, `run_${s}`, at);
  }
  db.prepare(
    "INSERT INTO run_claims (run_id, session_id, binding_id, host_pid, at) VALUES ('run_ses_1', 'ses_1', 'b', 1, ?)",
  ).run(at);
  db.prepare("INSERT INTO config_objects (kind, id, version, spec, updated_at) VALUES ('binding', 'b', 1, ?, ?)").run(
    JSON.stringify({ id: 'b', runner: 'echo' }),
    at,
  );
  db.close();
  return dataDir;
}

const count = (db: Db, table: string) => db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number;

describe('migration 6: tenants', () => {
  it('rebuilds sessions and dispatched_events on a database holding data: nothing lost, every FK intact', () => {
    const dataDir = version5Folder();
    const store = Store.open({ dataDir });
    const db = rawDb(store);
    expect(db.prepare('SELECT max(version) FROM schema_migrations').pluck().get()).toBe(
      Math.max(...builtinMigrations().map((m) => m.version)),
    );
    expect(db.pragma('foreign_key_check')).toEqual([]);
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    expect(db.prepare('SELECT * FROM sessions ORDER BY id').all()).toEqual([
      {
        id: 'ses_1',
        tenant: 'default',
        binding_id: 'b',
        conversation_key: 'k-ses_1',
        created_at: '2026-01-01T00:00:00.000Z',
        paused_reason: null,
      },
      {
        id: 'ses_2',
        tenant: 'default',
        binding_id: 'b',
        conversation_key: 'k-ses_2',
        created_at: '2026-01-01T00:00:00.000Z',
        paused_reason: 'paused by test',
      },
    ]);
    expect([count(db, 'events'), count(db, 'runs'), count(db, 'run_claims'), count(db, 'dispatched_events')]).toEqual([
      4, 2, 1, 2,
    ]);
    // events and runs still reference sessions (id) — not a renamed leftover table.
    for (const table of ['events', 'runs'])
      expect(db.pragma(`foreign_key_list(${table})`)).toEqual([
        expect.objectContaining({ table: 'sessions', from: 'session_id', to: 'id' }),
      ]);
    expect(db.prepare("SELECT count(*) FROM sqlite_master WHERE name LIKE '%_new'").pluck().get()).toBe(0);
    // The old deliveries belong to the default tenant; the same ids in another tenant are not them.
    expect(findDelivery(store, 'default', 'telegram', 'bot', 'e-ses_1')).toEqual({
      runId: 'run_ses_1',
      sessionId: 'ses_1',
      bindingId: 'b',
    });
    expect(findDelivery(store, 'acme', 'telegram', 'bot', 'e-ses_1')).toBeUndefined();
    // The old sessions are found under the new key; the store still refuses an event of a session that does not exist.
    expect(store.ensureSession('default', 'b', 'k-ses_1')).toEqual({ sessionId: 'ses_1', created: false });
    expect(() =>
      db
        .prepare(
          'INSERT INTO events (session_id, seq, id, type, at, data) ' +
            "VALUES ('ses_gone', 1, 'x', 'session.created', 'now', '{}')",
        )
        .run(),
    ).toThrow(/FOREIGN KEY/);
    // Stored config objects got the default tenant (the next apply of the same file finds them unchanged).
    expect(JSON.parse(db.prepare("SELECT spec FROM config_objects WHERE id = 'b'").pluck().get() as string)).toEqual({
      id: 'b',
      runner: 'echo',
      tenant: 'default',
    });
    store.close();
  });

  it('needs its deferred foreign keys: without them the rebuild fails and rolls back, losing nothing', () => {
    const dataDir = version5Folder();
    const db = openDatabase(join(dataDir, 'paddock.db'));
    const six = builtinMigrations().find((m) => m.version === 6)!;
    expect(six.sql).toContain('PRAGMA defer_foreign_keys = ON;');
    const without = { ...six, sql: six.sql.replace('PRAGMA defer_foreign_keys = ON;', '') };
    let error: unknown;
    try {
      migrate(db, [...before6(), without]);
    } catch (e) {
      error = e;
    }
    expect((error as HostError).code).toBe('MIGRATION_FAILED');
    expect((error as HostError).message).toMatch(/FOREIGN KEY constraint failed/);
    expect(db.prepare('SELECT max(version) FROM schema_migrations').pluck().get()).toBe(5);
    expect([count(db, 'sessions'), count(db, 'events'), count(db, 'runs'), count(db, 'dispatched_events')]).toEqual([
      2, 4, 2, 2,
    ]);
    expect((db.pragma('table_info(sessions)') as { name: string }[]).map((c) => c.name)).not.toContain('tenant');
    // The shipped migration then applies on the same database.
    migrate(db);
    expect(db.pragma('foreign_key_check')).toEqual([]);
    expect(count(db, 'sessions')).toBe(2);
    db.close();
  });
});

describe('tenant-keyed sessions and deliveries', () => {
  it('the session key includes the tenant: one binding and conversation in two tenants are two sessions', () => {
    const { store } = tempStore();
    const a = store.ensureSession('acme', 'b', 'k');
    const b = store.ensureSession('beta', 'b', 'k');
    expect(a.created && b.created).toBe(true);
    expect(a.sessionId).not.toBe(b.sessionId);
    expect(store.ensureSession('acme', 'b', 'k')).toEqual({ sessionId: a.sessionId, created: false });
    expect(tenantOfSession(store, a.sessionId)).toBe('acme');
    expect(tenantOfSession(store, b.sessionId)).toBe('beta');
    expect(tenantOfSession(store, 'ses_nope')).toBeUndefined();
    expect(sessionsOfTenant(store, 'acme').map((s) => s.id)).toEqual([a.sessionId]);
    expect(sessionsOfTenant(store, 'beta', { bindingId: 'other' })).toEqual([]);
    store.append(b.sessionId, [
      { type: 'run.queued', runId: 'run_b', data: { runner: 'echo', goalRevision: 0, attempt: 1 } },
    ]);
    expect(tenantOfRun(store, 'run_b')).toBe('beta');
    expect(tenantOfRun(store, 'run_nope')).toBeUndefined();
    expect(store.runs({ tenant: 'beta' }).map((r) => r.id)).toEqual(['run_b']);
    expect(store.runs({ tenant: 'acme' })).toEqual([]);
    store.close();
  });

  it('refuses a tenant that is not a tenant name, creating nothing', () => {
    const { store } = tempStore();
    for (const tenant of [
      'Acme',
      ' acme',
      'acme\n',
      '\u0430cme',
      '',
      '_x',
      'a'.repeat(64),
      'a/b',
      "a'; DROP TABLE sessions; --",
    ]) {
      let error: unknown;
      try {
        store.ensureSession(tenant, 'b', 'k');
      } catch (e) {
        error = e;
      }
      expect((error as HostError).code, JSON.stringify(tenant)).toBe('INVALID_INPUT');
    }
    expect(store.ensureSession('a'.repeat(63), 'b', 'k').created).toBe(true);
    expect(count(rawDb(store), 'sessions')).toBe(1);
    store.close();
  });

  it('dedupes per tenant: the same platform, bot and event id are two deliveries in two tenants', () => {
    const { store } = tempStore();
    const sa = store.ensureSession('acme', 'b', 'k').sessionId;
    const sb = store.ensureSession('beta', 'b', 'k').sessionId;
    const event = { platform: 'telegram', bot: 'bot', id: 'e1' };
    store.transaction(() => recordDelivery(store, 'acme', event, { bindingId: 'b', sessionId: sa, runId: 'run_a' }));
    expect(findDelivery(store, 'beta', 'telegram', 'bot', 'e1')).toBeUndefined();
    store.transaction(() => recordDelivery(store, 'beta', event, { bindingId: 'b', sessionId: sb, runId: 'run_b' }));
    expect(findDelivery(store, 'acme', 'telegram', 'bot', 'e1')).toEqual({
      runId: 'run_a',
      sessionId: sa,
      bindingId: 'b',
    });
    expect(findDelivery(store, 'beta', 'telegram', 'bot', 'e1')).toEqual({
      runId: 'run_b',
      sessionId: sb,
      bindingId: 'b',
    });
    // Within a tenant the key is still unique: a second insert is refused by the store.
    expect(() => recordDelivery(store, 'acme', event, { bindingId: 'b', sessionId: sa, runId: 'run_c' })).toThrow(
      /UNIQUE/,
    );
    store.close();
  });
});
