// Migration 15 on a database holding events: the events table is rebuilt without the unique index on `id`, and
// `events_by_run` becomes `events_by_run_except_updates`; every event, check and append-only trigger is kept, every
// reader's plan is the same (on the new index where it used the old), and appends go on gap-free.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../../host/state/db.js';
import { builtinMigrations, migrate } from '../../../host/state/migrate.js';
import { RUN_EVENTS_SQL, readEventsAfter, terminalSeqOfRun } from '../../../host/state/streamReads.js';
import { runStartedData } from '../../../host/state/recoveryReads.js';
import { Store } from '../../../host/state/store.js';
import { rawDb } from '../../helpers/rawDb.js';

const dataDir = mkdtempSync(join(tmpdir(), 'paddock-migration15-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** SQLite's plan for `sql`, its steps joined; every parameter bound to null (a plan does not depend on values). */
const plan = (db: ReturnType<typeof openDatabase>, sql: string): string => {
  const args = sql.includes('@') ? [{ run: null, session: null, after: null, limit: null }] : (sql.match(/\?/g) ?? []);
  const steps = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args.map((a) => (a === '?' ? null : a)));
  return (steps as { detail: string }[]).map((r) => r.detail).join('; ');
};
/** Every query the host runs on `events` (host/state/*.ts), by the plan SQLite picks for it. */
const READS = [
  'SELECT * FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?',
  "SELECT min(seq) FROM events WHERE run_id = ? AND type IN ('run.ended', 'run.interrupted')",
  'SELECT coalesce(max(seq), 0) + 1 FROM events WHERE session_id = ?',
  "SELECT data FROM events WHERE run_id = ? AND type = 'run.started' AND type <> 'run.update'",
  "SELECT coalesce(max(json_extract(data, '$.goalRevision')), 0) FROM events WHERE session_id = ? AND " +
    "type = 'run.queued'",
  `SELECT i.session_id FROM events i WHERE i.type LIKE 'effect.%' AND i.type = 'effect.intent' AND NOT EXISTS (
     SELECT 1 FROM events r WHERE json_extract(r.data, '$.effectId') = json_extract(i.data, '$.effectId')
       AND r.type LIKE 'effect.%' AND r.type IN ('effect.result', 'effect.reconciled', 'effect.resolved'))`,
  "SELECT 1 FROM events e WHERE e.type = 'approval.decided' AND json_extract(e.data, '$.grantId') = ?",
  'SELECT s.tenant FROM events e JOIN runs r ON r.id = e.run_id JOIN sessions s ON s.id = e.session_id ' +
    "WHERE e.type = 'approval.decided' AND json_extract(e.data, '$.approvalId') IS NULL",
];

describe('migration 15: fewer indexes on events', () => {
  it('keeps every event, index, check, trigger and read plan, and appends go on after it', () => {
    const db = openDatabase(join(dataDir, 'paddock.db'));
    migrate(
      db,
      builtinMigrations().filter((m) => m.version < 15),
    );
    const sessionId = 'ses_m15';
    const runId = 'run_m15';
    db.prepare(
      'INSERT INTO sessions (id, tenant, binding_id, conversation_key, created_at) ' +
        "VALUES (?, 'default', 'b1', 'c1', '')",
    ).run(sessionId);
    const rows: [string, string, unknown][] = [
      ['run.queued', runId, { runner: 'echo', goalRevision: 0, attempt: 1 }],
      ['run.started', runId, { pid: 42, pidStart: 7, recoveryDelivered: [] }],
      ...Array.from({ length: 50 }, (_, i): [string, string, unknown] => [
        'run.update',
        runId,
        { runnerSeq: i + 1, update: { kind: 'message.delta', text: `t${i}` } },
      ]),
    ];
    const insertOld = db.prepare(
      'INSERT INTO events (session_id, seq, id, type, run_id, at, data) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    rows.forEach(([type, run, data], i) =>
      insertOld.run(sessionId, i + 1, `evt_old${i}`, type, run, '2026-01-01T00:00:00.000Z', JSON.stringify(data)),
    );
    // Version 14 refused a second event with the same id; nothing reads by id, so 15 does not check it.
    expect(() => insertOld.run(sessionId, 99, 'evt_old0', 'run.update', runId, '', '{}')).toThrow(/events\.id/);
    const before = READS.map((sql) => plan(db, sql));
    db.close();
    const store = Store.open({ dataDir });
    try {
      const raw = rawDb(store);
      // Migrated to the newest version, 15 among them (later migrations do not touch events).
      expect(raw.prepare('SELECT max(version) FROM schema_migrations').pluck().get()).toBe(
        builtinMigrations().at(-1)!.version,
      );
      expect(raw.prepare('SELECT count(*) FROM schema_migrations WHERE version = 15').pluck().get()).toBe(1);
      expect(store.readEvents(sessionId).map((e) => [e.id, e.type, e.runId, e.data])).toEqual(
        rows.map(([type, run, data], i) => [`evt_old${i}`, type, run, data]),
      );
      expect(
        raw.prepare("SELECT name FROM sqlite_master WHERE tbl_name = 'events' AND type = 'index'").pluck().all(),
      ).toEqual(['events_by_run_except_updates', 'events_effects', 'events_run_end', 'events_approval_decided']);
      // The same plans; what went by events_by_run goes by its successor (the run's events but its updates).
      expect(READS.map((sql) => plan(raw, sql))).toEqual(
        before.map((p) => p.replace('INDEX events_by_run (', 'INDEX events_by_run_except_updates (')),
      );
      // A run's events (streamReads.ts): two index ranges merged in seq order, nothing scanned, nothing sorted.
      const runPlan = plan(raw, RUN_EVENTS_SQL);
      expect(runPlan).toMatch(/^MERGE \(UNION ALL\); LEFT; SEARCH events USING INDEX events_by_run_except_updates/);
      expect(runPlan).toMatch(/RIGHT; SEARCH events USING PRIMARY KEY \(session_id=\? AND seq>\?\)/);
      expect(runPlan).not.toMatch(/SCAN|TEMP B-TREE/);
      expect(readEventsAfter(store, { sessionId, runId, afterSeq: 50, limit: 10 }).map((e) => e.seq)).toEqual([51, 52]);
      expect(runStartedData(store, runId)).toContain('"pid":42');
      expect(terminalSeqOfRun(store, runId)).toBeUndefined();
      expect(() => raw.prepare('UPDATE events SET type = type WHERE seq = 1').run()).toThrow(/append-only/);
      expect(() => raw.prepare('DELETE FROM events WHERE seq = 1').run()).toThrow(/append-only/);
      const insert = raw.prepare(
        'INSERT INTO events (session_id, seq, id, type, run_id, at, data) ' +
          "VALUES (?, ?, 'evt_x', 'run.update', NULL, '', ?)",
      );
      expect(() => insert.run(sessionId, 100, '{not json')).toThrow(/CHECK constraint/);
      expect(() => insert.run(sessionId, 0, '{}')).toThrow(/CHECK constraint/);
      expect(() => insert.run('ses_none', 1, '{}')).toThrow(/FOREIGN KEY/);
      expect(() => insert.run(sessionId, 52, '{}')).toThrow(/UNIQUE constraint failed: events.session_id, events.seq/);
      const next = store.append(sessionId, [{ type: 'run.ended', runId, data: endData }]);
      expect(next.map((e) => e.seq)).toEqual([53]);
      expect(terminalSeqOfRun(store, runId)).toBe(53);
    } finally {
      store.close();
    }
  });
});

const endData = { status: 'completed', reason: 'done', exitCode: 0, signal: null } as const;
