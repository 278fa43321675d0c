import { processStartTime } from '../../sdk/process/procTable.js';
import { signalRunnerTree, waitForTreeGone } from '../process/groupSignals.js';
import { HostError } from '../errors.js';
import type { Store } from '../state/store.js';
import { probeEffect, PROBERS, type Prober } from './probes.js';

/** What recovery did at start. */
export interface RecoveryReport {
  interruptedRuns: { runId: string; sessionId: string; killedPid: number | null }[];
  effects: { effectId: string; sessionId: string; status: string; how: string }[];
  pausedSessions: string[];
}

/**
 * Reconcile what a previous host left unfinished (docs/state.md, "Recovery"): every run without a
 * terminal event whose owning host process is gone becomes `interrupted` (a runner that outlived a killed host is killed first,
 * matched by pid **and** start time); every effect intent without a result is probed; any
 * `unknown` or `still_running` effect pauses its session. Idempotent: a second call finds nothing.
 */
export async function reconcile(store: Store, probers: Record<string, Prober> = PROBERS): Promise<RecoveryReport> {
  const report: RecoveryReport = { interruptedRuns: [], effects: [], pausedSessions: [] };
  for (const run of store.runs({ status: ['queued', 'running'], limit: 1_000_000 })) {
    // Another host process (e.g. a `paddock dispatch` still streaming) owns this run and is alive.
    if (run.hostPid !== null && run.hostPid !== process.pid && run.hostStart !== null && processStartTime(run.hostPid) === run.hostStart) continue;
    let killedPid: number | null = null;
    if (run.pid !== null && run.pidStart !== null && processStartTime(run.pid) === run.pidStart) {
      signalRunnerTree(run.pid, 'SIGKILL');
      await waitForTreeGone(run.pid, 5_000);
      killedPid = run.pid;
    }
    const reason = killedPid ? `the host stopped during the run; its runner (pid ${killedPid}) was still alive and was killed` : 'the host stopped during the run';
    store.append(run.sessionId, [
      { type: 'run.interrupted', runId: run.id, data: { reason, killedPid }, audit: { type: 'recovery.run_interrupted', actor: 'host', data: { reason, killedPid } } },
    ]);
    report.interruptedRuns.push({ runId: run.id, sessionId: run.sessionId, killedPid });
  }

  const open = store.db
    .prepare(
      `SELECT i.session_id AS sessionId, i.run_id AS runId, i.data AS data FROM events i
       WHERE i.type LIKE 'effect.%' AND i.type = 'effect.intent' AND NOT EXISTS (
         SELECT 1 FROM events r WHERE json_extract(r.data, '$.effectId') = json_extract(i.data, '$.effectId')
           AND r.type LIKE 'effect.%' AND r.type IN ('effect.result', 'effect.reconciled', 'effect.resolved'))
       ORDER BY i.session_id, i.seq`,
    )
    .all() as { sessionId: string; runId: string | null; data: string }[];
  const toPause = new Map<string, string[]>();
  for (const row of open) {
    const intent = JSON.parse(row.data) as { effectId: string; kind: string; target: string; probe: Record<string, unknown> };
    const verdict = probeEffect(intent.kind, intent.probe, probers);
    store.append(row.sessionId, [
      {
        type: 'effect.reconciled',
        runId: row.runId,
        data: { effectId: intent.effectId, status: verdict.status, how: verdict.how },
        audit: { type: 'recovery.effect_reconciled', actor: 'host', data: { effectId: intent.effectId, kind: intent.kind, status: verdict.status, how: verdict.how } },
      },
    ]);
    report.effects.push({ effectId: intent.effectId, sessionId: row.sessionId, status: verdict.status, how: verdict.how });
    if (verdict.status === 'unknown' || verdict.status === 'still_running') {
      toPause.set(row.sessionId, [...(toPause.get(row.sessionId) ?? []), intent.effectId]);
    }
  }
  for (const [sessionId, effects] of toPause) {
    const reason = `recovery could not establish the outcome of ${effects.length} host-side effect(s); resolve with: paddock runs resolve <runId> --as succeeded|failed`;
    store.append(sessionId, [{ type: 'session.paused', data: { reason, effects }, audit: { type: 'recovery.session_paused', actor: 'host', data: { effects } } }]);
    report.pausedSessions.push(sessionId);
  }
  return report;
}

/**
 * A human decides the open effects of a run (`paddock runs resolve`): each gets
 * `effect.resolved`; when the session has no open effect left, it resumes.
 */
export function resolveRun(store: Store, runId: string, status: 'succeeded' | 'failed', by: string): { resolved: string[]; resumed: boolean } {
  const run = store.run(runId);
  if (!run) throw new HostError('NOT_FOUND', `no run ${runId}`);
  return store.transaction(() => {
    const before = store.session(run.sessionId);
    const mine = before.openEffects.filter((e) => e.runId === runId).map((e) => e.effectId);
    for (const effectId of mine) {
      store.append(run.sessionId, [
        { type: 'effect.resolved', runId, data: { effectId, status, by }, audit: { type: 'effect.resolved', actor: `user:${by}`, data: { effectId, status } } },
      ]);
    }
    const after = store.session(run.sessionId);
    const resumed = after.paused !== null && after.openEffects.length === 0;
    if (resumed) store.append(run.sessionId, [{ type: 'session.resumed', data: { by }, audit: { type: 'session.resumed', actor: `user:${by}`, data: {} } }]);
    return { resolved: mine, resumed };
  });
}
