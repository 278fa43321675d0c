import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { reconcile, resolveRun } from '../../../host/recovery/reconcile.js';
import { processStartTime } from '../../../host/util/procIdentity.js';
import { tempStore } from '../../helpers/store.js';
import { rawDb } from '../../helpers/rawDb.js';

function openRun(store: ReturnType<typeof tempStore>['store'], runId: string, pid?: number) {
  const { sessionId } = store.ensureSession('default', 'b', `k-${runId}`);
  store.append(sessionId, [{ type: 'run.queued', runId, data: { runner: 'echo', goalRevision: 0, attempt: 1 } }]);
  if (pid)
    store.append(sessionId, [
      { type: 'run.started', runId, data: { pid, pidStart: processStartTime(pid), recoveryDelivered: [] } },
    ]);
  return sessionId;
}

describe('recovery', () => {
  it('interrupts runs without an end, kills a runner that outlived the host, and is idempotent', async () => {
    const { store } = tempStore();
    const survivor = spawn('sleep', ['1000'], { detached: true, stdio: 'ignore' });
    await new Promise((r) => survivor.once('spawn', r));
    const s1 = openRun(store, 'run_a', survivor.pid);
    openRun(store, 'run_b');
    const exited = new Promise((r) => survivor.once('exit', r));
    const report = await reconcile(store);
    await exited;
    expect(report.interruptedRuns).toEqual(
      expect.arrayContaining([
        { runId: 'run_a', sessionId: s1, killedPid: survivor.pid },
        expect.objectContaining({ runId: 'run_b', killedPid: null }),
      ]),
    );
    expect(processStartTime(survivor.pid!)).toBeNull();
    expect(store.run('run_a')?.status).toBe('interrupted');
    expect(store.session(s1).pendingRecovery).toEqual([
      { runId: 'run_a', reason: expect.stringMatching(/was still alive and was killed/), effects: [] },
    ]);
    const none = { interruptedRuns: [], effects: [], pausedSessions: [], resumedSessions: [] };
    expect(await reconcile(store)).toEqual(none);
  });

  it("kills a warm run's setsid escapee, found by the slot id its environment carries", async () => {
    const { store } = tempStore();
    // A warm slot's processes carry the slot's id, not the run's: the process started before the run existed.
    const env = { ...process.env, PADDOCK_RUN_ID: 'wslot_recovery_test' };
    const runner = spawn('sleep', ['1000'], { detached: true, stdio: 'ignore', env });
    await new Promise((r) => runner.once('spawn', r));
    const escapee = spawn('setsid', ['sleep', '1000'], { stdio: 'ignore', env });
    await new Promise((r) => escapee.once('spawn', r));
    const { sessionId } = store.ensureSession('default', 'b', 'k-warm');
    store.append(sessionId, [
      { type: 'run.queued', runId: 'run_w', data: { runner: 'echo', goalRevision: 0, attempt: 1 } },
      {
        type: 'run.started',
        runId: 'run_w',
        data: {
          pid: runner.pid!,
          pidStart: processStartTime(runner.pid!),
          recoveryDelivered: [],
          envRunId: 'wslot_recovery_test',
        },
      },
    ]);
    const escapeeGone = new Promise((r) => escapee.once('exit', r));
    const report = await reconcile(store);
    await escapeeGone;
    expect(report.interruptedRuns).toEqual([{ runId: 'run_w', sessionId, killedPid: runner.pid }]);
    expect(processStartTime(escapee.pid!)).toBeNull();
    expect(store.session(sessionId).pendingRecovery[0]?.reason).toMatch(/1 other process\(es\) .* were killed/);
  });

  it('does not kill a process that merely reuses a recorded pid (start time differs)', async () => {
    const { store } = tempStore();
    const bystander = spawn('sleep', ['1000'], { stdio: 'ignore' });
    await new Promise((r) => bystander.once('spawn', r));
    const { sessionId } = store.ensureSession('default', 'b', 'k');
    store.append(sessionId, [
      { type: 'run.queued', runId: 'run_c', data: { runner: 'echo', goalRevision: 0, attempt: 1 } },
      {
        type: 'run.started',
        runId: 'run_c',
        data: { pid: bystander.pid!, pidStart: (processStartTime(bystander.pid!) ?? 0) + 1, recoveryDelivered: [] },
      },
    ]);
    const report = await reconcile(store);
    expect(report.interruptedRuns[0]?.killedPid).toBeNull();
    expect(processStartTime(bystander.pid!)).not.toBeNull();
    bystander.kill('SIGKILL');
  });

  it(
    'probes open effects: decidable ones get their status, unknown ones pause the session until a human ' +
      'resolves them',
    async () => {
      const { store, dataDir } = tempStore();
      const s = openRun(store, 'run_e');
      const ws = join(dataDir, 'workspaces', 'run_e');
      mkdirSync(ws, { recursive: true });
      store.append(s, [
        {
          type: 'effect.intent',
          runId: 'run_e',
          data: { effectId: 'eff_ws', kind: 'workspace.create', target: 'run_e', probe: { path: ws } },
        },
        {
          type: 'effect.intent',
          runId: 'run_e',
          data: { effectId: 'eff_push', kind: 'git.push', target: 'origin main', probe: {} },
        },
      ]);
      const report = await reconcile(store);
      expect(report.effects).toEqual([
        { effectId: 'eff_ws', sessionId: s, status: 'succeeded', how: `workspace ${ws} exists` },
        { effectId: 'eff_push', sessionId: s, status: 'unknown', how: 'no prober for effect kind git.push' },
      ]);
      expect(report.pausedSessions).toEqual([s]);
      const paused = store.session(s);
      expect(paused.paused?.reason).toMatch(/could not establish the outcome of 1 host-side effect/);
      expect(paused.openEffects.map((e) => e.effectId)).toEqual(['eff_push']);
      // Nothing was re-run: no new intent appeared.
      expect(store.readEvents(s).filter((e) => e.type === 'effect.intent')).toHaveLength(2);

      // The next run of the session will be told what recovery found about each effect.
      expect(paused.pendingRecovery[0]?.effects).toEqual([
        { id: 'eff_push', kind: 'git.push', status: 'unknown', summary: 'git.push origin main' },
        { id: 'eff_ws', kind: 'workspace.create', status: 'succeeded', summary: 'workspace.create run_e' },
      ]);
      const resolved = resolveRun(store, 'run_e', 'failed', 'ada');
      expect(resolved).toEqual({ resolved: ['eff_push'], resumed: true });
      const after = store.session(s);
      expect(after.paused).toBeNull();
      expect(after.openEffects).toEqual([]);
      const audit = rawDb(store).prepare("SELECT actor FROM audit WHERE type = 'effect.resolved'").pluck().all();
      expect(audit).toEqual(['user:ada']);
    },
  );
});
