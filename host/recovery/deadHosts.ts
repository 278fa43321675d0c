import type { Store } from '../state/store.js';
import type { HostLease } from '../state/hostLeases.js';
import { voidApprovals } from '../state/approvals.js';
import { lockExpiredHosts, markHostDead, openIntentsOfRun, openRunsOf, reownRuns } from '../state/hostTakeover.js';
import { probeEffect, PROBERS, type Prober } from './probes.js';
import { settleEffectsLeftByTakeover, type SettledEffects } from './settleAfterTakeover.js';
import { processStartTime } from '../util/procIdentity.js';

/** What one takeover did (docs/scale-out.md §4, "A dead host"). */
export interface TakeoverReport {
  hosts: HostLease[];
  interruptedRuns: { runId: string; sessionId: string; host: HostLease }[];
  reownedRuns: string[];
  effects: { effectId: string; sessionId: string; status: string; how: string }[];
  pausedSessions: string[];
  /**
   * What this host then decided on its own disk ({@link takeOverAndAnnounce}): when it took over an earlier start of
   * its own data folder, judged by the lease because it ran in another pid scope (before a reboot, in another
   * container).
   */
  settledHere?: SettledEffects;
}

/**
 * Probers as a host that is not `host` has them: every host-side effect today (a workspace) is on the dead host's own
 * disk, which this host cannot see, so each answers `unknown` — the session pauses for a human, never a blind re-run.
 * The dead host, back with the same host id, probes them at start (recovery/settleAfterTakeover.ts).
 */
export function remoteProbers(host: HostLease): Record<string, Prober> {
  const how = `the effect ran on host ${host.hostId} (epoch ${host.epoch}), whose disk this host cannot see`;
  return Object.fromEntries(Object.keys(PROBERS).map((kind) => [kind, () => ({ status: 'unknown' as const, how })]));
}

/**
 * Take over every host whose lease ran out (docs/scale-out.md §4), `me` being this host, in one transaction: each
 * open run of that (host, epoch) that is claimed or running gets `run.interrupted` (recovery's event and audit, and
 * its claim goes with it), its pending approvals are voided and its open effects probed as a remote host can
 * (`unknown` and `still_running` pause the session); its queued runs that never took a claim are re-owned by `me`;
 * the host is marked dead. The expired hosts are read and locked inside the transaction and a dead host is never
 * expired again, so however many hosts race, each run is interrupted once. `me` itself is never taken over here: a
 * host whose own lease ran out learns it from its renewal and stops.
 */
export function takeOverDeadHosts(
  store: Store,
  me: HostLease,
  probersFor: (host: HostLease) => Record<string, Prober> = remoteProbers,
): TakeoverReport {
  return store.transaction(() => {
    const report: TakeoverReport = { hosts: [], interruptedRuns: [], reownedRuns: [], effects: [], pausedSessions: [] };
    for (const host of lockExpiredHosts(store)) {
      if (host.hostId === me.hostId && host.epoch === me.epoch) continue;
      const reason = `host ${host.hostId} (epoch ${host.epoch}) stopped renewing its lease during the run`;
      const toPause = new Map<string, string[]>();
      const reowned: string[] = [];
      for (const run of openRunsOf(store, host)) {
        if (run.status === 'queued' && !run.claimed) {
          reowned.push(run.id);
          continue;
        }
        store.append(run.sessionId, [
          {
            type: 'run.interrupted',
            runId: run.id,
            data: { reason, killedPid: null },
            audit: {
              type: 'recovery.run_interrupted',
              actor: 'host',
              data: { reason, killedPid: null, deadHost: host },
            },
          },
        ]);
        report.interruptedRuns.push({ runId: run.id, sessionId: run.sessionId, host });
        voidApprovals(store, { runId: run.id }, new Date().toISOString(), 'its run was interrupted: its host died');
        for (const intent of openIntentsOfRun(store, run.id)) {
          const { effectId, kind, probe } = JSON.parse(intent.data) as {
            effectId: string;
            kind: string;
            probe: Record<string, unknown>;
          };
          const verdict = probeEffect(kind, probe, probersFor(host));
          store.append(intent.sessionId, [
            {
              type: 'effect.reconciled',
              runId: run.id,
              data: { effectId, status: verdict.status, how: verdict.how },
              audit: {
                type: 'recovery.effect_reconciled',
                actor: 'host',
                data: { effectId, kind, status: verdict.status, how: verdict.how },
              },
            },
          ]);
          report.effects.push({ effectId, sessionId: intent.sessionId, ...verdict });
          if (verdict.status === 'unknown' || verdict.status === 'still_running')
            toPause.set(intent.sessionId, [...(toPause.get(intent.sessionId) ?? []), effectId]);
        }
      }
      for (const [sessionId, effects] of toPause) {
        store.append(sessionId, [
          {
            type: 'session.paused',
            data: {
              reason:
                `host ${host.hostId} died; the outcome of ${effects.length} host-side effect(s) on its disk is ` +
                'unknown until it starts again on its data folder (its recovery decides them), or resolve with: ' +
                'paddock runs resolve <runId> --as succeeded|failed',
              effects,
            },
            audit: { type: 'recovery.session_paused', actor: 'host', data: { effects, deadHost: host } },
          },
        ]);
        report.pausedSessions.push(sessionId);
      }
      reownRuns(store, reowned, me, { pid: process.pid, start: processStartTime(process.pid) });
      markHostDead(store, host, me);
      store.audit.append({
        type: 'cluster.host_taken_over',
        actor: 'host',
        data: {
          host,
          by: me,
          interrupted: report.interruptedRuns.filter((r) => r.host === host).map((r) => r.runId),
          reowned,
        },
      });
      report.reownedRuns.push(...reowned);
      report.hosts.push(host);
    }
    return report;
  });
}

/** Per store, who hears of the takeovers it makes (the host: its dispatcher adopts the re-owned runs). */
const takeoverListeners = new WeakMap<Store, (report: TakeoverReport) => void>();

/**
 * Make `listener` hear of every takeover `store` makes, whichever path made it — the lease tick or a waiting run that
 * found a dead owner (recovery/reconcile.ts `reclaimDeadOwners`): a re-owned queued run nobody adopts would wait for
 * ever, holding up its session. `undefined` stops it.
 */
export function onTakeovers(store: Store, listener: ((report: TakeoverReport) => void) | undefined): void {
  if (listener) takeoverListeners.set(store, listener);
  else takeoverListeners.delete(store);
}

/**
 * {@link takeOverDeadHosts}, then the store's {@link onTakeovers} listener when it took a host over. A start it took
 * over of this host's own data folder (one this host could not judge by pid: another pid scope, claims.ts
 * `ownerIsLocal`) left its effects on this disk: they are probed here at once, as this folder's next start would
 * (settleAfterTakeover.ts), rather than pausing their sessions until then.
 */
export function takeOverAndAnnounce(store: Store, me: HostLease): TakeoverReport {
  const report = takeOverDeadHosts(store, me);
  if (report.hosts.some((host) => host.hostId === me.hostId)) report.settledHere = settleEffectsLeftByTakeover(store);
  if (report.hosts.length > 0) takeoverListeners.get(store)?.(report);
  return report;
}
