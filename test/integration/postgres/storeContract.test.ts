// The store's contract, run against both implementations (docs/scale-out.md, "Contract tests"): the embedded SQLite
// store and the PostgreSQL one. Real parts: a real PostgreSQL cluster (started here, failing loudly when missing),
// real second processes appending to the same session.
import { describe, expect, it } from 'vitest';
import { verifyAudit } from '../../../host/audit/verify.js';
import { auditTable } from '../../../host/state/auditTable.js';
import { builtinMigrations } from '../../../host/state/migrate.js';
import { dbOf } from '../../../host/state/store.js';
import type { StoredEvent } from '../../../host/state/events.js';
import { storeProcess } from '../../helpers/storeProcess.js';
import { postgresBackend, sqliteBackend, storesOf, type StoreBackend } from '../../helpers/storeBackends.js';

const delta = (n: number) => ({
  type: 'run.update' as const,
  runId: 'run_x',
  data: { runnerSeq: n, update: { kind: 'message.delta' as const, text: `d${n}` } },
});

for (const backend of [sqliteBackend(), postgresBackend()] as StoreBackend[]) {
  describe(`store contract: ${backend.name}`, () => {
    const { fresh, again } = storesOf(backend);

    it('two processes appending to one session at once get gap-free seqs, each its events in order', async () => {
      const { store, options } = fresh();
      const { sessionId } = store.ensureSession('default', 'b1', 'c1');
      const count = 300;
      const args = (tag: string) => [options.dataDir, options.databaseUrl ?? '', sessionId, String(count), tag];
      const a = await storeProcess('appendsEvents.ts', args('a'));
      const b = await storeProcess('appendsEvents.ts', args('b'));
      a.go();
      b.go();
      const [seqsA, seqsB] = (await Promise.all([a.done, b.done])) as [number[], number[]];
      // Every seq given out once: 2 .. 1 + 2·count (1 is session.created), no gap, no duplicate.
      const all = [...seqsA, ...seqsB].sort((x, y) => x - y);
      expect(all).toEqual(Array.from({ length: 2 * count }, (_, i) => i + 2));
      expect(seqsA).toHaveLength(count);
      // The log agrees, and each process's events are in the order it appended them.
      const events = store.readEvents(sessionId);
      expect(events.map((e) => e.seq)).toEqual(Array.from({ length: 2 * count + 1 }, (_, i) => i + 1));
      for (const tag of ['a', 'b']) {
        const mine = events.filter((e) => e.runId === `run_${tag}`) as StoredEvent<'run.update'>[];
        expect(mine.map((e) => e.data.runnerSeq)).toEqual(Array.from({ length: count }, (_, i) => i + 1));
      }
      // Both processes really interleaved (otherwise the test proved nothing about concurrency).
      const owners = events.slice(1).map((e) => e.runId);
      const switches = owners.filter((o, i) => i > 0 && o !== owners[i - 1]).length;
      expect(switches).toBeGreaterThan(1);
    });

    it('two processes claiming at once: one run per session in queue order, one per binding slot', async () => {
      const { store, options } = fresh();
      const queue = (sessionId: string, runId: string, bindingId: string) =>
        store.append(sessionId, [
          { type: 'run.queued', runId, data: { runner: 'echo', goalRevision: 0, attempt: 1, bindingId } },
        ]);
      const s1 = store.ensureSession('default', 'b1', 'c1').sessionId;
      queue(s1, 'run_1a', 'b1');
      queue(s1, 'run_1b', 'b1');
      // Ten more bindings, each with six sessions holding a run, and two slots: ten independent races for a limit.
      const limited = Array.from({ length: 60 }, (_, i) => {
        const bindingId = `bl${Math.floor(i / 6)}`;
        const sessionId = store.ensureSession('default', bindingId, `c${i}`).sessionId;
        queue(sessionId, `run_${bindingId}_${i}`, bindingId);
        return { runId: `run_${bindingId}_${i}`, sessionId, bindingId };
      });
      const req = (runId: string, sessionId: string, bindingId: string) => ({
        runId,
        sessionId,
        bindingId,
        maxPerBinding: bindingId === 'b1' ? 1 : 2,
        maxTotal: 100,
      });
      // Both processes go through the bindings in the same order, each through a binding's sessions from its own end:
      // they reach each binding together and race for its slots with different runs.
      const byBinding = (reversed: boolean) =>
        Array.from({ length: 10 }, (_, b) => {
          const runs = limited.filter((r) => r.bindingId === `bl${b}`);
          return reversed ? runs.reverse() : runs;
        }).flat();
      const requests = (reversed: boolean) => [
        ...(reversed ? [req('run_1a', s1, 'b1'), req('run_1b', s1, 'b1')] : [req('run_1b', s1, 'b1')]),
        ...byBinding(reversed).map((r) => req(r.runId, r.sessionId, r.bindingId)),
      ];
      const args = (list: unknown[]) => [options.dataDir, options.databaseUrl ?? '', JSON.stringify(list)];
      const a = await storeProcess('claimsRuns.ts', args(requests(false)));
      const b = await storeProcess('claimsRuns.ts', args(requests(true)));
      a.go();
      b.go();
      const [gotA, gotB] = (await Promise.all([a.done, b.done])) as [string[], string[]];
      const all = [...gotA, ...gotB].sort();
      // Session 1: its first queued run only (the second waits behind it); each limited binding: two runs, its slots.
      expect(all.filter((r) => r.startsWith('run_1'))).toEqual(['run_1a']);
      for (let b = 0; b < 10; b++)
        expect(
          all.filter((r) => r.startsWith(`run_bl${b}_`)),
          `bl${b}`,
        ).toHaveLength(2);
      const claims = dbOf(store).prepare('SELECT run_id FROM run_claims ORDER BY run_id').pluck().all();
      expect(claims).toEqual(all);
    });

    it('the database refuses to change or remove an event or an audit record (append-only)', () => {
      const { store } = fresh();
      const { sessionId } = store.ensureSession('default', 'b1', 'c1');
      store.append(sessionId, [delta(1)]);
      const db = dbOf(store);
      expect(() => db.prepare("UPDATE events SET type = 'x' WHERE session_id = ?").run(sessionId)).toThrow(
        /events are append-only/,
      );
      expect(() => db.prepare('DELETE FROM events WHERE session_id = ?').run(sessionId)).toThrow(
        /events are append-only/,
      );
      expect(() => db.prepare("UPDATE audit SET actor = 'x'").run()).toThrow(/audit is append-only/);
      expect(() => db.prepare('DELETE FROM audit').run()).toThrow(/audit is append-only/);
      // TRUNCATE skips row triggers on PostgreSQL: a statement trigger refuses it (SQLite has no TRUNCATE).
      if (backend.name === 'postgres') {
        expect(() => db.exec('TRUNCATE events')).toThrow(/events are append-only/);
        expect(() => db.exec('TRUNCATE audit')).toThrow(/audit is append-only/);
      }
      expect(store.readEvents(sessionId).map((e) => e.type)).toEqual(['session.created', 'run.update']);
    });

    it('a transaction that throws leaves nothing: its seqs are given out again, listeners hear none of it', () => {
      const { store } = fresh();
      const { sessionId } = store.ensureSession('default', 'b1', 'c1');
      const heard: number[] = [];
      store.subscribe((e) => heard.push(e.seq));
      expect(() =>
        store.transaction(() => {
          store.append(sessionId, [delta(1), delta(2)]);
          throw new Error('boom');
        }),
      ).toThrow('boom');
      expect(heard).toEqual([]);
      // A savepoint rolled back inside a transaction that commits: only the outer events stay, in order.
      store.transaction(() => {
        store.append(sessionId, [delta(3)]);
        expect(heard).toEqual([]); // not before the commit
        expect(() =>
          store.transaction(() => {
            store.append(sessionId, [delta(4)]);
            throw new Error('inner');
          }),
        ).toThrow('inner');
        store.append(sessionId, [delta(5)]);
      });
      expect(heard).toEqual([2, 3]);
      const stored = store.readEvents(sessionId) as StoredEvent<'run.update'>[];
      expect(stored.slice(1).map((e) => [e.seq, e.data.runnerSeq])).toEqual([
        [2, 3],
        [3, 5],
      ]);
    });

    it('is migrated to every shipped version, and opening it again applies nothing', () => {
      const { store, options } = fresh();
      const versions = dbOf(store).prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all();
      expect(versions).toEqual(builtinMigrations().map((m) => m.version));
      store.close();
      const reopened = again(options);
      expect(dbOf(reopened).prepare('SELECT count(*) FROM schema_migrations').pluck().get()).toBe(versions.length);
      const migrated = dbOf(reopened).prepare("SELECT count(*) FROM audit WHERE type = 'state.migrated'").pluck().get();
      expect(migrated).toBe(1);
    });

    it('keeps one audit chain that verifies with its checkpoints, and shows a record edited past the triggers', () => {
      const { store } = fresh();
      // 600 records: two signed checkpoints (every 256) inside the chain, one more at close.
      store.transaction(() => {
        for (let i = 0; i < 600; i++) store.audit.append({ type: 'test.record', actor: 'contract', data: { i } });
      });
      const db = dbOf(store);
      expect(verifyAudit(auditTable(db), store.key.publicKey)).toMatchObject({ ok: true, checkpoints: 2 });
      // Whoever owns the tables can switch a trigger off; the chain still shows the edit.
      const edit = 'UPDATE audit SET data = \'{"i":-1}\' WHERE seq = 300';
      if (backend.name === 'postgres') {
        db.exec(
          `ALTER TABLE audit DISABLE TRIGGER audit_no_update; ${edit}; ` +
            'ALTER TABLE audit ENABLE TRIGGER audit_no_update',
        );
      } else {
        db.exec(`DROP TRIGGER audit_no_update; ${edit}`);
      }
      expect(verifyAudit(auditTable(db), store.key.publicKey)).toMatchObject({
        ok: false,
        problem: 'edited',
        seq: 300,
      });
    });

    it('keeps the run view rows in step with the events, in the events transaction', () => {
      const { store } = fresh();
      const { sessionId } = store.ensureSession('default', 'b1', 'c1');
      store.append(sessionId, [
        { type: 'run.queued', runId: 'run_1', data: { runner: 'echo', goalRevision: 0, attempt: 1, bindingId: 'b1' } },
      ]);
      store.append(sessionId, [{ type: 'run.started', runId: 'run_1', data: { pid: 4242, pidStart: 7 } }]);
      expect(store.run('run_1')).toMatchObject({ status: 'running', pid: 4242, pidStart: 7, bindingId: 'b1' });
      store.append(sessionId, [
        {
          type: 'run.ended',
          runId: 'run_1',
          data: { status: 'completed', reason: 'done', exitCode: 0, signal: null, usage: { inputTokens: 3 } },
        },
      ]);
      expect(store.run('run_1')).toMatchObject({ status: 'completed', reason: 'done', usage: { inputTokens: 3 } });
      expect(store.runs({ status: ['completed'] }).map((r) => r.id)).toEqual(['run_1']);
      expect(store.session(sessionId).runs[0]).toMatchObject({ runId: 'run_1', status: 'completed' });
    });
  });
}
