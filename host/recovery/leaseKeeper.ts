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
  /** After each renewal and its takeovers: balancing (`paddock serve` takes on other hosts' waiting runs). */
  afterRenewal?: () => void;
}

/**
 * How much sooner than the lease's end the host's runners are ended when no renewal came: the runner spawner looks
 * every 100 ms, and a run must be gone before another host may take its conversation over — a fifth of the lease, at
 * most 1 s (1 s of a 15 s lease).
 */
export function leaseMargin(leaseMs: number): number {
  return Math.min(1_000, Math.floor(leaseMs / 5));
}

/**
 * How often the lease is renewed: every quarter of it. The last renewal before a database outage may be that long
 * before it, so an outage up to the rest of the lease (three quarters, less {@link renewRetryMs}) costs nothing.
 */
export function renewEveryMs(leaseMs: number): number {
  return Math.max(1, Math.floor(leaseMs / 4));
}

/**
 * How soon a renewal that failed (the database unreachable) is tried again: a quarter of a second, or a twelfth of a
 * short lease. Waiting for the next quarter instead cost the whole cluster its leases in an outage of a third of the
 * lease (outside attack 5, F1: every host saw the same outage, and each next renewal came at or past its lease's end).
 */
export function renewRetryMs(leaseMs: number): number {
  return Math.max(1, Math.min(250, Math.floor(leaseMs / 12)));
}

/** A running lease: its identity, and how to stop keeping it. */
export interface LeaseKeeper {
  lease: HostLease;
  /** Stop renewing and, when this host owns no open run, give the lease up (nobody takes a clean stop over). */
  close(): void;
}

/**
 * Register this start of the host, fence the store's writes about runs to it (runFence.ts), and every quarter of the
 * lease renew it (a failed renewal again within {@link renewRetryMs}), then take over every host whose lease ran out
 * (deadHosts.ts). Each renewal also bounds the store's `leaseHolds` (what the host may still do for its runs). The
 * timer does not keep the process alive: a one-off command ends when its work does.
 */
export function keepLease(store: Store, options: LeaseKeeperOptions): LeaseKeeper {
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  // The database's `now()` is read after the request left: the lease written lasts at least `leaseMs` from `asked`.
  const validFrom = (asked: number) => {
    const ms = leaseMs - leaseMargin(leaseMs) - (performance.now() - asked);
    store.holdToLease(performance.now() + ms);
    options.onValidFor?.(ms);
  };
  const registeredAsked = performance.now();
  const lease = registerHost(store, { hostId: options.hostId, version: options.version, leaseMs });
  validFrom(registeredAsked);
  fenceRunWrites(store, lease);
  onTakeovers(store, options.onTakeover);
  // Renewals are judged against this process's monotonic clock too: when none succeeded for a whole lease (the
  // database unreachable, the process paused), another host may already have taken the runs over.
  let renewedAt = performance.now();
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  // Failures in a row: the first of a run is told (a warning), then every 20th, not each quick retry.
  let failures = 0;
  const tick = () => {
    if (stopped) return;
    clearTimeout(retry);
    retry = undefined;
    try {
      const asked = performance.now();
      if (!renewLease(store, lease, leaseMs)) {
        lose(`host ${lease.hostId} (epoch ${lease.epoch}) lost its lease: it ran out or another host took it over`);
        return;
      }
      renewedAt = performance.now();
      failures = 0;
      validFrom(asked);
    } catch (error) {
      if (failures++ % 20 === 0) options.onError(error);
      if (performance.now() - renewedAt >= leaseMs) {
        lose(`host ${lease.hostId} (epoch ${lease.epoch}) could not renew its lease for ${leaseMs} ms`);
        return;
      }
      // Tried again soon, not at the next quarter (renewRetryMs).
      retry = setTimeout(tick, renewRetryMs(leaseMs));
      retry.unref();
      return;
    }
    try {
      takeOverAndAnnounce(store, lease);
      options.afterRenewal?.();
    } catch (error) {
      options.onError(error); // the next tick tries again
    }
  };
  // A lost lease acts for no run from now on (Store.leaseHolds), whatever its last renewal said.
  const lose = (why: string) => {
    stop();
    store.holdToLease(0);
    options.onLost(why);
  };
  const timer = setInterval(tick, renewEveryMs(leaseMs));
  timer.unref();
  const stop = () => {
    stopped = true;
    clearTimeout(retry);
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
        if (releaseLease(store, lease)) {
          store.holdToLease(undefined);
          options.onValidFor?.(null);
        }
      } catch (error) {
        options.onError(error); // the lease then runs out, and a takeover finds no open run of ours
      }
    },
  };
}
