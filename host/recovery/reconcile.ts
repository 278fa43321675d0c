import { processStartTime } from '../util/procIdentity.js';
import { signalRunnerTree, waitForTreeGone } from '../process/groupSignals.js';
import { HostError } from '../errors.js';
import type { RunRow, Store } from '../state/store.js';
import { voidApprovals } from '../state/approvals.js';
import { effectClosed, openEffectIntents, runStartedData } from '../state/recoveryReads.js';
import { probeEffect, PROBERS, type Prober } from './probes.js';
import { holdsClaim, ownerIsLocal, ownerLive } from '../state/claims.js';
import { RunCgroup, runCgroupNames } from '../sandbox/cgroups.js';
import { killEscapees } from '../process/runEnvScan.js';
import { unmountQuotasOf } from '../sandbox/quotaSweep.js';
import { takeOverAndAnnounce } from './deadHosts.js';
import { settleEffectsLeftByTakeover } from './settleAfterTakeover.js';

/**
 * Kill whatever is left in a dead host's run cgroup (recorded with `run.started`, or derived from the run id) and in
 * the cgroups of the run's stdio MCP servers (`<runId>-mcp-<server>`: the host starts those itself, so the runner
 * spawner does not kill them when the host dies), and remove them. Returns how many processes were killed, which
 * survived, and how many survived unseen: members outside this process's pid namespace, never signalled (RunCgroup).
 */
async function emptyRunCgroup(
  store: Store,
  runId: string,
): Promise<{ killed: number; survivors: number[]; hidden: number }> {
  const started = runStartedData(store, runId);
  const recorded = started ? ((JSON.parse(started) as { cgroups?: unknown }).cgroups ?? []) : [];
  const cgroups = [
    RunCgroup.attach(runId, Array.isArray(recorded) ? recorded.filter((d): d is string => typeof d === 'string') : []),
    ...runCgroupNames()
      .filter((name) => name.startsWith(`${runId}-mcp-`))
      .map((name) => RunCgroup.attach(name, [])),
  ];
  const left = { killed: 0, survivors: [] as number[], hidden: 0 };
  for (const cgroup of cgroups) {
    if (!cgroup) continue;
    const members = cgroup.members();
    const survivors = await cgroup.killAll(5_000);
    const hidden = cgroup.hiddenMembers();
    if (survivors.length === 0 && hidden === 0) await cgroup.release();
    left.killed += members.length - survivors.length;
    left.survivors.push(...survivors);
    left.hidden += hidden;
  }
  return left;
}

/** The `PADDOCK_RUN_ID` a run's processes carry: the warm slot's id recorded with `run.started`, else the run id. */
function envRunIdOf(store: Store, runId: string): string {
  const started = runStartedData(store, runId);
  const recorded = started ? (JSON.parse(started) as { envRunId?: unknown }).envRunId : undefined;
  return typeof recorded === 'string' && recorded !== '' ? recorded : runId;
}

/**
 * Whether a run that has not ended is this pass's to interrupt: its owner is on this machine (another host's run is
 * its lease's to judge, and its takeover's to interrupt, deadHosts.ts) and that host process is gone. A never-claimed
 * run queued under a lease (PostgreSQL) did no work: the takeover of its host's start hands it on (re-owned, adopted,
 * run), as it does when another host finds it first — its message is answered either way (docs/scale-out.md §4, CL9).
 */
function abandonedHere(store: Store, run: RunRow): boolean {
  if (run.status !== 'queued' && run.status !== 'running') return false;
  if (!ownerIsLocal(store, run) || ownerLive(store, run)) return false;
  return !(run.status === 'queued' && run.ownerHost !== null && !holdsClaim(store, run.id));
}

/** What recovery did at start. */
export interface RecoveryReport {
  interruptedRuns: { runId: string; sessionId: string; killedPid: number | null }[];
  effects: { effectId: string; sessionId: string; status: string; how: string }[];
  pausedSessions: string[];
  /** Sessions a takeover paused that resumed once this host probed their effects on its own disk. */
  resumedSessions: string[];
}

/**
 * Reconcile what a previous host left unfinished (docs/state.md, "Recovery"): every run without a
 * terminal event whose owning host process is gone becomes `interrupted` (a runner that outlived a killed host is
 * killed first,
 * matched by pid **and** start time); every effect intent without a result is probed; any
 * `unknown` or `still_running` effect pauses its session. Idempotent: a second call finds nothing.
 */
export async function reconcile(store: Store, probers: Record<string, Prober> = PROBERS): Promise<RecoveryReport> {
  const report: RecoveryReport = { interruptedRuns: [], effects: [], pausedSessions: [], resumedSessions: [] };
  for (const listed of store.runs({ status: ['queued', 'running'], limit: 1_000_000 })) {
    // Each run is judged on its row as it is now, not as listed: killing a run's leftovers takes up to seconds, and
    // meanwhile another host's takeover may have re-owned a listed queued run, and its new owner claimed and started it
    // (the cluster campaign: a run interrupted here while its new owner ran it to its end, ended twice).
    const run = store.run(listed.id);
    if (!run || !abandonedHere(store, run)) continue;
    let killedPid: number | null = null;
    if (run.pid !== null && run.pidStart !== null && processStartTime(run.pid) === run.pidStart) {
      signalRunnerTree(run.pid, 'SIGKILL');
      await waitForTreeGone(run.pid, 5_000);
      killedPid = run.pid;
    }
    // The group kill misses descendants that called setsid; the run's cgroup holds them all.
    const cgroup = await emptyRunCgroup(store, run.id);
    // And whatever left the cgroup too but still carries the run's id (a warm slot's id) in its environment.
    const escaped = await killEscapees(envRunIdOf(store, run.id), 5_000, run.pidStart ?? 0);
    // Its quota filesystems, left mounted by the dead host: the session's next run must mount its folder again.
    try {
      unmountQuotasOf(store.dataDir, [{ runId: run.id, sessionId: run.sessionId }]);
    } catch {
      // Left for the next host start's sweep (a run of the session fails closed on "already mounted" until then).
    }
    cgroup.killed += escaped.found.length - escaped.survivors.length;
    cgroup.survivors.push(...escaped.survivors);
    const reason = [
      killedPid
        ? `the host stopped during the run; its runner (pid ${killedPid}) was still alive and was killed`
        : 'the host stopped during the run',
      ...(cgroup.killed > 0
        ? [`${cgroup.killed} other process(es) left in its cgroup (or carrying its run id) were killed`]
        : []),
      ...(cgroup.survivors.length > 0 ? [`pids ${cgroup.survivors.join(', ')} of its cgroup could not be killed`] : []),
      ...(cgroup.hidden > 0
        ? [
            `${cgroup.hidden} process(es) of its cgroup could not be killed: outside this host's pid namespace ` +
              '(listed as pid 0), not signalled',
          ]
        : []),
    ].join('; ');
    // Another process may be recovering the same run right now, or a takeover re-owned it since it was judged: append
    // only if it is still open, still the same owner's, still abandoned here.
    const appended = store.transaction(() => {
      const now = store.run(run.id);
      if (!now || now.ownerHost !== run.ownerHost || now.ownerEpoch !== run.ownerEpoch) return false;
      if (!abandonedHere(store, now)) return false;
      store.append(run.sessionId, [
        {
          type: 'run.interrupted',
          runId: run.id,
          data: { reason, killedPid },
          audit: {
            type: 'recovery.run_interrupted',
            actor: 'host',
            data: {
              reason,
              killedPid,
              cgroupKilled: cgroup.killed,
              cgroupSurvivors: cgroup.survivors,
              cgroupHidden: cgroup.hidden,
            },
          },
        },
      ]);
      return true;
    });
    if (appended) {
      report.interruptedRuns.push({ runId: run.id, sessionId: run.sessionId, killedPid });
      // Nobody waits for its approvals any more: void them, so no approver decides one for a run that is gone.
      voidApprovals(store, { runId: run.id }, new Date().toISOString(), 'its run was interrupted by a host stop');
    }
  }

  const open = openEffectIntents(store);
  const toPause = new Map<string, string[]>();
  for (const row of open) {
    const intent = JSON.parse(row.data) as {
      effectId: string;
      kind: string;
      target: string;
      probe: Record<string, unknown>;
    };
    // An effect of a run a live host process still owns is in flight, not abandoned: leave it to that process. One of
    // another host's runs is on that host's disk: its takeover, or that host's own start, probes it.
    const leftHere = () => {
      const owner = row.runId ? store.run(row.runId) : undefined;
      if (owner && !ownerIsLocal(store, owner)) return false;
      return !(owner && (owner.status === 'queued' || owner.status === 'running') && ownerLive(store, owner));
    };
    if (!leftHere()) continue;
    const verdict = probeEffect(intent.kind, intent.probe, probers, store.dataDir);
    // Judged again where it is recorded: the effect's own process (or a takeover) may have closed it since.
    const recorded = store.transaction(() => {
      if (effectClosed(store, row.sessionId, intent.effectId) || !leftHere()) return false;
      store.append(row.sessionId, [
        {
          type: 'effect.reconciled',
          runId: row.runId,
          data: { effectId: intent.effectId, status: verdict.status, how: verdict.how },
          audit: {
            type: 'recovery.effect_reconciled',
            actor: 'host',
            data: { effectId: intent.effectId, kind: intent.kind, status: verdict.status, how: verdict.how },
          },
        },
      ]);
      return true;
    });
    if (!recorded) continue;
    report.effects.push({
      effectId: intent.effectId,
      sessionId: row.sessionId,
      status: verdict.status,
      how: verdict.how,
    });
    if (verdict.status === 'unknown' || verdict.status === 'still_running') {
      toPause.set(row.sessionId, [...(toPause.get(row.sessionId) ?? []), intent.effectId]);
    }
  }
  for (const [sessionId, effects] of toPause) {
    const reason =
      `recovery could not establish the outcome of ${effects.length} host-side effect(s); resolve with: paddock ` +
      `runs resolve <runId> --as succeeded|failed`;
    store.append(sessionId, [
      {
        type: 'session.paused',
        data: { reason, effects },
        audit: { type: 'recovery.session_paused', actor: 'host', data: { effects } },
      },
    ]);
    report.pausedSessions.push(sessionId);
  }
  // What a takeover by another host left undecided on this host's disk (PostgreSQL): probed here, now that it can be.
  const settled = settleEffectsLeftByTakeover(store, probers);
  report.effects.push(...settled.effects);
  report.resumedSessions.push(...settled.resumedSessions);
  return report;
}

/**
 * Free what dead owners hold so waiting runs can claim (a claim found `deadOwners`): {@link reconcile} for this
 * machine's runs, then, on a host with a lease, the takeover of every host whose lease ran out (deadHosts.ts).
 */
export async function reclaimDeadOwners(store: Store): Promise<RecoveryReport> {
  const report = await reconcile(store);
  const lease = store.lease;
  if (lease) {
    const takeover = takeOverAndAnnounce(store, lease);
    report.interruptedRuns.push(
      ...takeover.interruptedRuns.map(({ runId, sessionId }) => ({ runId, sessionId, killedPid: null })),
    );
    report.effects.push(...takeover.effects);
    report.pausedSessions.push(...takeover.pausedSessions);
  }
  return report;
}

/**
 * A human decides the open effects of a run (`paddock runs resolve`, `POST /v1/runs/:id/resolve`): each gets
 * `effect.resolved`; when the session has no open effect left, it resumes. The audit actor is `user:<by>` unless
 * `actor` names who acted (the API's token, `api:<tokenId>`; then `by`, the name the caller gave, is in the data).
 */
export function resolveRun(
  store: Store,
  runId: string,
  status: 'succeeded' | 'failed',
  by: string,
  actor?: string,
): { resolved: string[]; resumed: boolean } {
  const audited = actor ?? `user:${by}`;
  const named = actor === undefined ? {} : { by };
  const run = store.run(runId);
  if (!run) throw new HostError('NOT_FOUND', `no run ${runId}`);
  return store.transaction(() => {
    const before = store.sessionControl(run.sessionId);
    const mine = before.openEffects.filter((e) => e.runId === runId).map((e) => e.effectId);
    for (const effectId of mine) {
      store.append(run.sessionId, [
        {
          type: 'effect.resolved',
          runId,
          data: { effectId, status, by },
          audit: { type: 'effect.resolved', actor: audited, data: { effectId, status, ...named } },
        },
      ]);
    }
    const after = store.sessionControl(run.sessionId);
    const resumed = after.paused !== null && after.openEffects.length === 0;
    if (resumed)
      store.append(run.sessionId, [
        { type: 'session.resumed', data: { by }, audit: { type: 'session.resumed', actor: audited, data: named } },
      ]);
    return { resolved: mine, resumed };
  });
}
