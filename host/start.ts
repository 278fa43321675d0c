/**
 * Host start-up in one place (open the store, migrate, reconcile, sweep): the CLI, the coming HTTP server and library
 * users call {@link openHost}.
 */
import { DISPATCH_DEFAULTS, type HostConfig } from './config/hostConfig.js';
import { sweepSessionFolders, sweepWorkspaces } from './runs/workspace.js';
import { clearDeadSlotCgroups } from './runs/deadSlots.js';
import { liveSlotIds } from './runs/warmSlotId.js';
import { removeOrphanQuotaImages, unmountLeftoverQuotas } from './sandbox/quotaSweep.js';
import { TOKENS } from './di/tokens.js';
import { openHostStore } from './hostStore.js';
import { reconcile, type RecoveryReport } from './recovery/reconcile.js';
import type { Store } from './state/store.js';
import { ownerIsLocal } from './state/claims.js';
import { holdRunnersToLease } from './process/runnerSpawner.js';
import { sweepRunCgroups } from './sandbox/cgroups.js';
import { sweepRunSockets } from './sandbox/runSockets.js';
import { ConfigRepo } from './state/configRepo.js';
import { clearInterruptedSetIdBits } from './recovery/setIdLeftovers.js';
import { keepLease, type LeaseKeeper } from './recovery/leaseKeeper.js';
import { hostIdOf } from './state/hostLeases.js';
import { HOST_INFO } from './config/hostConfig.js';
import type { configureContainer } from './di/configure.js';

/** What {@link openHost} starts besides the store. */
export interface OpenHostOptions {
  /**
   * Start the gateway's host-wide loopback listener now (a long-lived server wants it up before
   * the first run); otherwise it starts with the first run that needs it (the CLI: `paddock runs
   * list` binds no port).
   */
  listen?: boolean;
  /**
   * On a shared store (PostgreSQL): the host lost its lease (docs/scale-out.md §4), so another host may already have
   * interrupted its runs. `paddock serve` stops, cancelling what it holds; without this the host logs it, cancels
   * its runs, and its writes about them are refused from then on (runFence.ts).
   */
  onLeaseLost?: (why: string) => void;
  /**
   * On a shared store: on each lease renewal, take on runs other hosts queued and cannot start for want of their own
   * slots (balancing, docs/scale-out.md §4). A long-lived server wants it; a one-off command would hold them up.
   */
  balance?: boolean;
}

/**
 * The host's state opened and recovered, without its services (docs/state.md, "Start-up"): open the store (migrating
 * it), reconcile what a stopped host left, sweep expired workspaces and session folders, leftover quota images and
 * mounts, empty run cgroups and set-id bits. What the read commands (`paddock runs list`, `sessions show`) need; it
 * loads no gateway, run service or dispatcher. {@link openHost} starts the same way, then adds the services.
 */
export async function openHostState(config: HostConfig) {
  const host = openHostStore(config);
  const { store } = host;
  try {
    const recovery = await reconcile(store);
    // Before the sweeps: a dead host's slot process would keep its quota mount busy.
    await clearDeadSlotCgroups();
    sweepLeftovers(config, store, recovery);
    return { ...host, recovery };
  } catch (error) {
    store.close();
    throw error;
  }
}

/** The sweeps of start-up, after recovery: what runs that are over left on disk, in cgroups and in set-id bits. */
function sweepLeftovers(config: HostConfig, store: Store, recovery: RecoveryReport): void {
  // Retention: workspaces of runs that are over (or never recorded) expire after the TTL.
  const liveRuns = store.runs({ status: ['queued', 'running'], limit: 1_000_000 });
  const live = {
    // Warm slots of live host processes (this one's or another's) are not runs in the store but are as live.
    runs: new Set([...liveRuns.map((r) => r.id), ...liveSlotIds(config.dataDir)]),
    sessions: new Set(liveRuns.map((r) => r.sessionId)),
  };
  // Disk-quota filesystems a stopped host left mounted go first: the sweeps never cross a mount. Only this folder's
  // runs can hold a mount on it: a session that another host runs on (its run there live, this folder's run of it
  // interrupted by that host's takeover) keeps no mount here, and one kept would refuse this host's next run of it.
  const local = liveRuns.filter((r) => ownerIsLocal(store, r));
  unmountLeftoverQuotas(config.dataDir, {
    runs: new Set([...local.map((r) => r.id), ...liveSlotIds(config.dataDir)]),
    sessions: new Set(local.map((r) => r.sessionId)),
  });
  sweepWorkspaces(config.dataDir, config.workspaceTtlMs ?? DISPATCH_DEFAULTS.workspaceTtlMs, live.runs);
  sweepSessionFolders(config.dataDir, config.sessionTtlMs ?? DISPATCH_DEFAULTS.sessionTtlMs, live.sessions);
  removeOrphanQuotaImages(config.dataDir, live);
  // Empty per-run cgroups a release could not remove, of runs this store knows ended (other hosts
  // share <cgroup>/paddock/: docs/state.md, "Run cgroups").
  sweepRunCgroups((runId) => {
    const run = store.run(runId);
    return run !== undefined && run.status !== 'queued' && run.status !== 'running';
  });
  sweepRunSockets(config.dataDir, (id) => !['queued', 'running'].includes(store.run(id)?.status ?? 'queued'));
  clearInterruptedSetIdBits(config.dataDir, recovery, new ConfigRepo(store), (files) =>
    store.transaction(() => store.audit.append({ type: 'recovery.setid_cleared', actor: 'host', data: { files } })),
  );
}

/**
 * Start the host in one place: {@link openHostState}, then the services on a DI container (the composition root is
 * imported here, lazily, so the read path never loads it) and, with `listen`, the gateway listener. The machine probe
 * (what sandboxing this host can enforce, host/sandbox/probe.ts) runs meanwhile without blocking and has finished when
 * this returns. Returns the container, the store, what recovery did, and `close()`.
 */
export async function openHost(config: HostConfig, options: OpenHostOptions = {}) {
  // The machine probe (real bwrap, unshare, mkfs and mount helpers) runs while the store opens and the services load;
  // every run plans and launches against its report (docs/decisions.md, issue 12 — dispatch overhead).
  // (Imported here, lazily: the read path, openHostState, never probes.)
  const machine = import('./sandbox/probe.js').then((probe) => probe.primeMachineProbe());
  // Awaited below; a probe that throws is probed again, blocking, where a run needs it (and fails there).
  machine.catch(() => undefined);
  const { recovery, ...host } = await openHostState(config);
  const { store } = host;
  let container;
  let gatewayUrl: string | undefined;
  let lease: LeaseKeeper | undefined;
  try {
    const { configureContainer } = await import('./di/configure.js');
    container = configureContainer(config, host);
    if (store.shared) lease = keepHostLease(config, container, options);
    gatewayUrl = options.listen ? await container.resolve(TOKENS.Gateway).loopbackUrl() : undefined;
    await machine.catch(() => undefined);
  } catch (error) {
    lease?.close();
    store.close();
    throw error;
  }
  const services = container;
  let closed = false;
  return {
    container: services,
    store,
    recovery,
    /** The gateway's loopback URL when started with `listen`. */
    gatewayUrl,
    /** Stop the gateway's listeners and close the store (signing the audit head). Idempotent. */
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      try {
        // No pooled runner process outlives its host (docs/warm-pool.md).
        await services.resolve(TOKENS.RunService).warmPools.close();
        await services.resolve(TOKENS.Gateway).close();
      } finally {
        lease?.close();
        store.close();
      }
    },
  };
}

/**
 * The host's lease on a shared store (recovery/leaseKeeper.ts): fenced from its first run; runs of hosts it takes over
 * that were queued and never started are adopted by its dispatcher (their session's queue carries on); a lost lease
 * cancels every run this host holds, then tells `options.onLeaseLost`.
 */
function keepHostLease(
  config: HostConfig,
  container: ReturnType<typeof configureContainer>,
  options: OpenHostOptions,
): LeaseKeeper {
  const log = container.resolve(TOKENS.Logger);
  const dispatcher = () => container.resolve(TOKENS.Dispatcher);
  return keepLease(container.resolve(TOKENS.Store), {
    hostId: hostIdOf(config.dataDir),
    version: HOST_INFO.version,
    leaseMs: config.leaseMs,
    onTakeover: (report) => {
      for (const host of report.hosts)
        log.warn({ host, interrupted: report.interruptedRuns.length }, 'took over a host whose lease ran out');
      // One run that cannot be adopted (its stored event refused, its end not written) must not strand the others.
      for (const runId of report.reownedRuns)
        try {
          dispatcher().adopt(runId);
        } catch (error) {
          log.error({ err: error, runId }, 'could not adopt a queued run of a host that died');
        }
    },
    onLost: (why) => {
      log.error({ why }, 'lease lost: cancelling the runs this host holds');
      // The stop is told even if cancelling threw: a host that lost its lease must not serve on (docs CL5).
      try {
        dispatcher().cancelAll(why);
      } finally {
        options.onLeaseLost?.(why);
      }
    },
    afterRenewal: options.balance
      ? () => {
          try {
            const taken = dispatcher().takeOnWaitingRuns();
            if (taken.length > 0) log.info({ runs: taken }, 'took on queued runs of hosts short of slots');
          } catch (error) {
            log.warn({ err: error }, 'could not take on queued runs of other hosts (tried again next tick)');
          }
        }
      : undefined,
    onError: (error) => log.warn({ err: error }, 'could not renew the host lease (tried again next tick)'),
    // A host paused past its lease keeps no runner going (outside attack F4; docs/runner-spawner.md).
    onValidFor: holdRunnersToLease,
  });
}

/** A started host (see {@link openHost}). */
export type StartedHost = Awaited<ReturnType<typeof openHost>>;

/** One line per recovery action, for stderr (empty when there was nothing to recover). */
export function describeRecovery(report: RecoveryReport): string[] {
  return [
    ...report.interruptedRuns.map(
      (r) =>
        `recovery: run ${r.runId} was interrupted by a host stop` +
        `${r.killedPid ? `; its surviving runner (pid ${r.killedPid}) was killed` : ''}`,
    ),
    ...report.effects.map((e) => `recovery: effect ${e.effectId} → ${e.status} (${e.how})`),
    ...report.pausedSessions.map(
      (s) =>
        `recovery: session ${s} is paused until its unknown effects are resolved (paddock runs resolve ` +
        `<runId> --as succeeded|failed)`,
    ),
    ...report.resumedSessions.map((s) => `recovery: session ${s} resumed: its effects were decided on this host`),
  ];
}
