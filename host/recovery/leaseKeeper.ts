/** A host's lease kept while it runs (docs/scale-out.md §4, "Wired into the host"; decision CL5). */
import type { Store } from '../state/store.js';
import { DEFAULT_LEASE_MS, registerHost, releaseLease, renewLease, type HostLease } from '../state/hostLeases.js';
import { fenceRunWrites } from '../state/runFence.js';
import { onTakeovers, takeOverAndAnnounce, type TakeoverReport } from './deadHosts.js';

/** What a host does with its lease's events. */
export interface LeaseKeeperOptions {
  hostId: string;
  version: string;
  leaseMs?: number;
  /**
   * This store took hosts over (a tick, or a waiting run's reclaim): their runs were interrupted and their queued runs
   * are this host's now.
   */
  onTakeover: (report: TakeoverReport) => void;
  /** The lease is lost (a renewal refused, or none succeeded for a whole lease): stop claiming, end the runs. */
  onLost: (why: string) => void;
  /** A tick that failed (the database unreachable a moment): the next one tries again. */
  onError: (error: unknown) => void;
  /**
   * How long from now the lease surely lasts, at its start and after each renewal (its length from the moment before
   * the renewal was asked, less {@link leaseMargin}); null once the lease is given up at a clean stop. The host bounds
   * its runners with it (runnerSpawner.ts `holdRunnersToLease`): a host paused past it keeps no runner going.
   */
  onValidFor?: (ms: number | null) => void;
}

/**
 * How much sooner than the lease's end the host's runners are ended when no renewal came: the runner spawner looks
 * every 100 ms, and a run must be gone before another host may take its conversation over — a fifth of the lease, at
 * most 1 s (1 s of a 15 s lease).
 */
export function leaseMargin(leaseMs: number): number {
  return Math.min(1_000, Math.floor(leaseMs / 5));
}

/** A running lease: its identity, and how to stop keeping it. */
export interface LeaseKeeper {
  lease: HostLease;
  /** Stop renewing and, when this host owns no open run, give the lease up (nobody takes a clean stop over). */
  close(): void;
}

/**
 * Register this start of the host, fence the store's writes about runs to it (runFence.ts), and every third of the
 * lease renew it, then take over every host whose lease ran out (deadHosts.ts). The timer does not keep the process
 * alive: a one-off command ends when its work does.
 */
export function keepLease(store: Store, options: LeaseKeeperOptions): LeaseKeeper {
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  // The database's `now()` is read after the request left: the lease written lasts at least `leaseMs` from `asked`.
  const validFrom = (asked: number) =>
    options.onValidFor?.(leaseMs - leaseMargin(leaseMs) - (performance.now() - asked));
  const registeredAsked = performance.now();
  const lease = registerHost(store, { hostId: options.hostId, version: options.version, leaseMs });
  validFrom(registeredAsked);
  fenceRunWrites(store, lease);
  onTakeovers(store, options.onTakeover);
  // Renewals are judged against this process's monotonic clock too: when none succeeded for a whole lease (the
  // database unreachable, the process paused), another host may already have taken the runs over.
  let renewedAt = performance.now();
  let stopped = false;
  const tick = () => {
    if (stopped) return;
    try {
      const asked = performance.now();
      if (!renewLease(store, lease, leaseMs)) {
        stop();
        options.onLost(
          `host ${lease.hostId} (epoch ${lease.epoch}) lost its lease: it ran out or another host took it over`,
        );
        return;
      }
      renewedAt = performance.now();
      validFrom(asked);
      takeOverAndAnnounce(store, lease);
    } catch (error) {
      options.onError(error);
      if (performance.now() - renewedAt >= leaseMs) {
        stop();
        options.onLost(`host ${lease.hostId} (epoch ${lease.epoch}) could not renew its lease for ${leaseMs} ms`);
      }
    }
  };
  const timer = setInterval(tick, Math.max(1, Math.floor(leaseMs / 3)));
  timer.unref();
  const stop = () => {
    stopped = true;
    clearInterval(timer);
    onTakeovers(store, undefined);
  };
  // A host starting takes over at once what died before it, rather than a third of a lease later.
  queueMicrotask(tick);
  return {
    lease,
    close() {
      if (stopped) return;
      stop();
      try {
        if (releaseLease(store, lease)) options.onValidFor?.(null);
      } catch (error) {
        options.onError(error); // the lease then runs out, and a takeover finds no open run of ours
      }
    },
  };
}
