import { auditTable } from '../host/state/auditTable.js';
import { createPublicKey } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { auditKeyPaths } from '../host/audit/auditKey.js';
import { verifyAudit } from '../host/audit/verify.js';
import { reconcile } from '../host/recovery/reconcile.js';
import { dbOf, Store } from '../host/state/store.js';
import { fmt } from './stats.js';

const delta = (i: number) => ({
  type: 'run.update' as const,
  runId: 'run_x',
  data: { runnerSeq: i + 1, update: { kind: 'message.delta' as const, text: 'hello world ' } },
});

/** Events appended per second (one transaction each, as the host does), recovery and audit verify. */
export async function stateBench(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-bench-state-'));
  const results: Record<string, unknown> = {};
  console.log('\n## State store (SQLite WAL, synchronous=NORMAL, one transaction per event as the host appends them)');

  // 1. Append rate: one session, and 100 sessions round-robin.
  {
    const store = Store.open({ dataDir: join(dir, 'append') });
    const one = store.ensureSession('default', 'b', 'one').sessionId;
    const many = Array.from({ length: 100 }, (_, i) => store.ensureSession('default', 'b', `many-${i}`).sessionId);
    const n = 50_000;
    let t = performance.now();
    for (let i = 0; i < n; i++) store.append(one, [delta(i)]);
    const single = n / ((performance.now() - t) / 1000);
    t = performance.now();
    for (let i = 0; i < n; i++) store.append(many[i % 100]!, [delta(i)]);
    const hundred = n / ((performance.now() - t) / 1000);
    t = performance.now();
    for (let i = 0; i < n / 100; i++)
      store.transaction(() => {
        for (let j = 0; j < 100; j++) store.append(one, [delta(j)]);
      });
    const batched = n / ((performance.now() - t) / 1000);
    console.log(`append, 1 session:      ${fmt(single / 1000)}k events/s (${n} events, one transaction each)`);
    console.log(`append, 100 sessions:   ${fmt(hundred / 1000)}k events/s (round-robin)`);
    console.log(
      `append, batches of 100: ${fmt(batched / 1000)}k events/s (one transaction per 100: the ceiling for ` +
        `grouped commits)`,
    );
    results.append = { singleSession: single, hundredSessions: hundred, batched100: batched };
    store.close();
  }

  // 2. Recovery after a crash: 1M events in 10k sessions, 1% of runs left open, 1% with an open effect.
  {
    const dataDir = join(dir, 'recovery');
    let store = Store.open({ dataDir });
    const sessions = 10_000;
    const perSession = 100;
    const t0 = performance.now();
    for (let s = 0; s < sessions; s++) {
      store.transaction(() => {
        const sessionId = store.ensureSession('default', 'b', `c-${s}`).sessionId;
        const runId = `run_${s}`;
        const open = s % 100 === 0;
        const batch = [
          { type: 'run.queued' as const, runId, data: { runner: 'echo', goalRevision: 0, attempt: 1 } },
          { type: 'run.started' as const, runId, data: { pid: 999_999, pidStart: 1, recoveryDelivered: [] } },
          ...Array.from({ length: perSession - (open ? 3 : 4) }, (_, i) => ({ ...delta(i), runId })),
          ...(open
            ? [
                {
                  type: 'effect.intent' as const,
                  runId,
                  data: {
                    effectId: `eff_${s}`,
                    kind: 'workspace.remove',
                    target: runId,
                    probe: { path: `/nonexistent/${s}` },
                  },
                },
              ]
            : [
                {
                  type: 'run.ended' as const,
                  runId,
                  data: { status: 'completed' as const, reason: 'ok', exitCode: 0, signal: null },
                },
              ]),
        ];
        store.append(sessionId, batch);
      });
    }
    const events = dbOf(store).prepare('SELECT count(*) FROM events').pluck().get() as number;
    console.log(
      `recovery set-up: ${events} events in ${sessions} sessions written in ` +
        `${fmt((performance.now() - t0) / 1000)} s (not part of the figure)`,
    );
    store.close(); // the "crash": a new host opens the same data
    let t = performance.now();
    store = Store.open({ dataDir });
    const openMs = performance.now() - t;
    t = performance.now();
    const report = await reconcile(store);
    const reconcileMs = performance.now() - t;
    console.log(`open store (WAL, migrations check): ${fmt(openMs)} ms`);
    console.log(
      `reconcile: ${fmt(reconcileMs)} ms → ${report.interruptedRuns.length} runs interrupted, ` +
        `${report.effects.length} effects probed`,
    );
    results.recovery = {
      events,
      sessions,
      openMs,
      reconcileMs,
      interrupted: report.interruptedRuns.length,
      effects: report.effects.length,
    };

    // 3. Audit verify over what these runs wrote, plus 200k more records.
    for (let b = 0; b < 200; b++)
      store.transaction(() => {
        for (let i = 0; i < 1_000; i++)
          store.audit.append({
            type: 'bench.fact',
            actor: 'host',
            data: { b, i, what: 'spawn', argv: ['node', 'runner.mjs'] },
          });
      });
    const records = dbOf(store).prepare('SELECT count(*) FROM audit').pluck().get() as number;
    t = performance.now();
    const verdict = verifyAudit(
      auditTable(dbOf(store)),
      createPublicKey(readFileSync(auditKeyPaths(dataDir).publicPath)),
    );
    const verifyMs = performance.now() - t;
    if (!verdict.ok) throw new Error(`audit did not verify: ${JSON.stringify(verdict)}`);
    console.log(
      `audit verify: ${records} records in ${fmt(verifyMs)} ms = ${fmt(records / (verifyMs / 1000) / 1000)}k records/s`,
    );
    results.auditVerify = { records, ms: verifyMs, perSecond: records / (verifyMs / 1000) };
    store.close();
  }
  rmSync(dir, { recursive: true, force: true });
  return results;
}
