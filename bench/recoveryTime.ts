// Recovery time, SQLite vs PostgreSQL (issue 17): a host start finds `n` runs a dead host process left running, each
// with an open workspace effect, and recovers them (`reconcile`: each run interrupted, its cgroup, escapees and quota
// mounts looked for, each effect probed on disk, the sessions paused or not). On PostgreSQL also the cluster's path: a
// live host takes a dead host over (`takeOverDeadHosts`: every run interrupted and every effect reconciled in one
// transaction, the other host's disk not probed). The runners are gone already (the spawner killed them with their
// host): what is measured is the store's and the probes' part, which is what differs between the stores.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { reconcile } from '../host/recovery/reconcile.js';
import { takeOverDeadHosts } from '../host/recovery/deadHosts.js';
import { tryClaim } from '../host/state/claims.js';
import { hostIdOf, registerHost } from '../host/state/hostLeases.js';
import { fenceRunWrites } from '../host/state/runFence.js';
import { dbOf, Store, type StoreOptions } from '../host/state/store.js';
import { PgDb } from '../host/state/pg/pgDb.js';
import { startPgCluster } from '../test/helpers/pgCluster.js';
import { fmt } from './stats.js';

/** A pid no process has (above the kernel's pid_max default). */
const DEAD_PID = 4_999_999;

/** `n` running runs of a dead host process, each with an open workspace effect (half made on disk, half not). */
function leaveRuns(store: Store, n: number): void {
  for (let i = 0; i < n; i++) {
    const sessionId = store.ensureSession('default', 'b1', `c${i}`).sessionId;
    const runId = `run_bench_${i}`;
    const host = { pid: DEAD_PID, start: 1 };
    store.append(sessionId, [
      { type: 'run.queued', runId, data: { runner: 'echo', goalRevision: 0, attempt: 1, bindingId: 'b1', host } },
    ]);
    tryClaim(store, { runId, sessionId, bindingId: 'b1', maxPerBinding: 1_000_000, maxTotal: 1_000_000 });
    dbOf(store).prepare('UPDATE run_claims SET host_pid = ?, host_start = 1 WHERE run_id = ?').run(DEAD_PID, runId);
    const path = join(store.dataDir, 'workspaces', runId);
    if (i % 2 === 0) mkdirSync(path, { recursive: true });
    store.append(sessionId, [
      {
        type: 'effect.intent',
        runId,
        data: { effectId: `eff_${i}`, kind: 'workspace.create', target: runId, probe: { path } },
      },
      { type: 'run.started', runId, data: { pid: DEAD_PID, pidStart: 1 } },
    ]);
  }
}

/** Milliseconds of one start's recovery of `n` left runs on a new store. */
async function restart(options: StoreOptions, n: number): Promise<number> {
  const before = Store.open(options);
  const lease = options.databaseUrl
    ? registerHost(before, { hostId: hostIdOf(options.dataDir), version: 'b' })
    : undefined;
  if (lease) fenceRunWrites(before, lease);
  leaveRuns(before, n);
  before.close();
  const now = Store.open(options);
  try {
    if (options.databaseUrl)
      fenceRunWrites(now, registerHost(now, { hostId: hostIdOf(options.dataDir), version: 'b' }));
    const t = performance.now();
    const report = await reconcile(now);
    const ms = performance.now() - t;
    if (report.interruptedRuns.length !== n) throw new Error(`recovered ${report.interruptedRuns.length} of ${n}`);
    return ms;
  } finally {
    now.close();
  }
}

/** Milliseconds of another host's takeover of a dead host that left `n` runs (PostgreSQL). */
function takeover(url: string, dir: string, n: number): number {
  const deadDir = join(dir, 'dead');
  const dead = Store.open({ dataDir: deadDir, databaseUrl: url });
  const deadLease = registerHost(dead, { hostId: hostIdOf(deadDir), version: 'b' });
  fenceRunWrites(dead, deadLease);
  leaveRuns(dead, n);
  dbOf(dead).prepare('UPDATE hosts SET lease_until = 0 WHERE host_id = ?').run(deadLease.hostId);
  dead.close();
  const liveDir = join(dir, 'live');
  const live = Store.open({ dataDir: liveDir, databaseUrl: url });
  try {
    const lease = registerHost(live, { hostId: hostIdOf(liveDir), version: 'b' });
    fenceRunWrites(live, lease);
    const t = performance.now();
    const report = takeOverDeadHosts(live, lease);
    const ms = performance.now() - t;
    if (report.interruptedRuns.length !== n) throw new Error(`took over ${report.interruptedRuns.length} of ${n}`);
    return ms;
  } finally {
    live.close();
  }
}

/** The figures of docs/benchmarks.md "Recovery time, SQLite vs PostgreSQL" (npx tsx bench/run.ts recovery-time). */
export async function recoveryTimeBench(): Promise<Record<string, unknown>> {
  console.log('\n## Recovery time: SQLite vs PostgreSQL');
  const sizes = (process.env.PADDOCK_BENCH_RECOVERY ?? '10,100,500').split(',').map(Number);
  const cluster = startPgCluster({ fsync: true });
  const results: Record<string, Record<string, number>> = {};
  try {
    for (const n of sizes) {
      const dir = mkdtempSync(join(tmpdir(), 'paddock-bench-recovery-'));
      try {
        // A schema per measurement: each starts from an empty store (the migrations land in it).
        const schemaUrl = (schema: string) => {
          new PgDb(cluster.url).exec(`CREATE SCHEMA ${schema}`).close();
          return `${cluster.url}&options=-csearch_path%3D${schema}`;
        };
        const sqlite = await restart({ dataDir: join(dir, 'sqlite') }, n);
        const postgres = await restart({ dataDir: join(dir, 'pg'), databaseUrl: schemaUrl(`restart_${n}`) }, n);
        const taken = takeover(schemaUrl(`takeover_${n}`), dir, n);
        results[String(n)] = { sqliteMs: sqlite, postgresMs: postgres, takeoverMs: taken };
        console.log(
          `${String(n).padStart(4)} runs left: SQLite restart ${fmt(sqlite, 1)} ms (baseline) | PostgreSQL restart ` +
            `${fmt(postgres, 1)} ms (${fmt(postgres / sqlite, 2)}×) | PostgreSQL takeover by another host ` +
            `${fmt(taken, 1)} ms (${fmt(taken / sqlite, 2)}×)`,
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
    console.log(
      'method: each size on new stores; the runs left by a dead host process (a pid no process has), each ' +
        'claimed and started with one open workspace effect (half on disk); timed: `reconcile` of the next start ' +
        'of that folder (per run: interrupt, cgroup and /proc escapee scan, quota unmount, probe) and, on ' +
        'PostgreSQL, `takeOverDeadHosts` by a live host (one transaction, the dead disk not probed). PostgreSQL 15 ' +
        'with fsync on, Unix socket; SQLite WAL, NORMAL. Ratios to SQLite in the same run.',
    );
  } finally {
    cluster.stop();
  }
  return results;
}
