/** Hosts and their leases (docs/scale-out.md §4, "Host identity and leases"; decisions CL1–CL2). */
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pidScope } from '../util/pidScope.js';
import { dialectOf, type Db } from './db.js';
import { IDLE_IN_TRANSACTION_MS } from './pg/pgDb.js';
import { dbOf, type Store } from './store.js';

/** One start of one host: the host's stable id (per data folder) and this start's epoch. */
export interface HostLease {
  hostId: string;
  epoch: number;
}

/** The lease a host takes and renews every quarter of it (docs/scale-out.md §4). */
export const DEFAULT_LEASE_MS = 15_000;

/**
 * How long the host's store connections may sit idle inside a transaction (PostgreSQL): 2 s, or under a shorter lease
 * half of it. Another host paused holding the writer lock blocks this one's event loop (the store is synchronous) until
 * the server ends that transaction; blocked longer than its lease less its margin, this host would lose its lease too
 * (with a 1.5 s lease every host lost it at once, decision PH8).
 */
export function idleInTransactionBound(leaseMs: number | undefined): number {
  return Math.min(IDLE_IN_TRANSACTION_MS, Math.floor((leaseMs ?? DEFAULT_LEASE_MS) / 2));
}

/**
 * The database's clock in milliseconds since 1970, as SQL: a lease is never judged by a host's own clock. On SQLite
 * (one data folder, one machine) the database's clock is the machine's, the one every process of the folder reads.
 * `now()` is the transaction's start on PostgreSQL: before the writer lock's wait, so a lease it writes is at most that
 * wait shorter and a lease it judges expired expired at least that long ago — both the safe side.
 */
export function dbNowMs(db: Db): string {
  return dialectOf(db) === 'postgres'
    ? 'CAST(extract(epoch FROM now()) * 1000 AS bigint)'
    : "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)";
}

/** The file in a data folder holding its host id. */
const HOST_ID_FILE = 'host-id';

/**
 * The data folder's host id (`hst_<uuid>`), created on first use: the same on every start of a host on this folder,
 * so a host that comes back finds its own leftovers (docs/scale-out.md §4, "A dead host").
 */
export function hostIdOf(dataDir: string): string {
  const path = join(dataDir, HOST_ID_FILE);
  try {
    // 'wx': two processes starting at once on a new folder cannot both create it; the loser reads the winner's.
    writeFileSync(path, `hst_${randomUUID()}\n`, { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  return readFileSync(path, 'utf8').trim();
}

/** The data folder's host id if it has one yet ({@link hostIdOf} makes it), without creating it. */
export function existingHostId(dataDir: string): string | undefined {
  try {
    return readFileSync(join(dataDir, HOST_ID_FILE), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/**
 * Register a new start of `hostId`: the next epoch, a lease of `leaseMs` from now on the database's clock, and the pid
 * scope it runs in (who may judge its runs by pid: {@link startPidScope}).
 */
export function registerHost(store: Store, options: { hostId: string; version: string; leaseMs?: number }): HostLease {
  const db = dbOf(store);
  return store.transaction(() => {
    const epoch = db
      .prepare('SELECT coalesce(max(epoch), 0) + 1 FROM hosts WHERE host_id = ?')
      .pluck()
      .get(options.hostId) as number;
    db.prepare(
      'INSERT INTO hosts (host_id, epoch, started_at, lease_until, version, pid_scope) ' +
        `VALUES (?, ?, ?, ${dbNowMs(db)} + ?, ?, ?)`,
    ).run(
      options.hostId,
      epoch,
      new Date().toISOString(),
      options.leaseMs ?? DEFAULT_LEASE_MS,
      options.version,
      pidScope(),
    );
    return { hostId: options.hostId, epoch };
  });
}

/**
 * The pid scope a host start registered (`hosts.pid_scope`, util/pidScope.ts); null for a start before migration 20
 * or one that could not read its scope, and undefined for a start the store does not know.
 */
export function startPidScope(store: Store, start: HostLease): string | null | undefined {
  const row = dbOf(store)
    .prepare('SELECT pid_scope FROM hosts WHERE host_id = ? AND epoch = ?')
    .get(start.hostId, start.epoch) as { pid_scope: string | null } | undefined;
  return row === undefined ? undefined : row.pid_scope;
}

/**
 * Extend the lease by `leaseMs` from now, only if it has not run out and no host took this one over. False: the lease
 * is lost — another host may already have interrupted this host's runs, so the caller must stop claiming, stop its
 * runs and exit (its writes about them are refused anyway: runFence.ts).
 */
export function renewLease(store: Store, lease: HostLease, leaseMs = DEFAULT_LEASE_MS): boolean {
  const db = dbOf(store);
  const now = dbNowMs(db);
  // One statement, outside the writer lock (its own transaction): a host paused while holding that lock (until the
  // server ends its idle transaction, PH8) must not make every other host miss its renewals and lose its lease — a
  // short lease lost all of them at once. The row lock serialises it with a takeover of this host, which locks the
  // row `FOR UPDATE` (hostTakeover.ts) and marks it dead: a renewal after that matches no row.
  return (
    db
      .prepare(
        `UPDATE hosts SET lease_until = ${now} + ? WHERE host_id = ? AND epoch = ? AND lease_until > ${now} ` +
          'AND dead_at IS NULL',
      )
      .run(leaseMs, lease.hostId, lease.epoch).changes === 1
  );
}

/**
 * Give the lease up at a clean stop: the host's row is marked dead, taken over by itself, so no other host takes it
 * over — only when it owns no run that has not ended (those stay for a takeover once the lease runs out). True when
 * released.
 */
export function releaseLease(store: Store, lease: HostLease): boolean {
  const db = dbOf(store);
  return store.transaction(() => {
    const open = db
      .prepare("SELECT count(*) FROM runs WHERE owner_host = ? AND owner_epoch = ? AND status IN ('queued', 'running')")
      .pluck()
      .get(lease.hostId, lease.epoch);
    if (Number(open) > 0) return false;
    return (
      db
        .prepare(
          `UPDATE hosts SET dead_at = ?, taken_over_by = ?, lease_until = ${dbNowMs(db)} WHERE host_id = ? AND ` +
            'epoch = ? AND dead_at IS NULL',
        )
        .run(new Date().toISOString(), `${lease.hostId}/${lease.epoch}`, lease.hostId, lease.epoch).changes === 1
    );
  });
}

/** A host's row as the cluster sees it. */
export interface HostRow {
  hostId: string;
  epoch: number;
  startedAt: string;
  leaseUntil: number;
  version: string;
  deadAt: string | null;
  takenOverBy: string | null;
}

/** Every host row, newest start first (for `paddock doctor` and tests). */
export function hostRows(store: Store): HostRow[] {
  return dbOf(store)
    .prepare(
      'SELECT host_id AS hostId, epoch, started_at AS startedAt, lease_until AS leaseUntil, version, ' +
        'dead_at AS deadAt, taken_over_by AS takenOverBy FROM hosts ORDER BY started_at DESC, host_id, epoch',
    )
    .all() as HostRow[];
}
