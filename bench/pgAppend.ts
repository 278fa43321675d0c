// Event append throughput through the real Store, SQLite (the default) vs PostgreSQL (docs/scale-out.md), the way
// the host appends: one transaction per event (one session, then 100 round-robin), and appendMany batches of 100 (the
// append batcher's group commit under load). PostgreSQL over its Unix socket and over TCP through a proxy holding every
// server-to-client chunk 1 ms (a database 1 ms away; batches only, the per-event modes would take minutes).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Store, type StoreOptions } from '../host/state/store.js';
import { startPgCluster } from '../test/helpers/pgCluster.js';
import { delayProxy } from './pgBridge.js';
import { fmt } from './stats.js';

const delta = (i: number) => ({
  type: 'run.update' as const,
  runId: 'run_x',
  data: { runnerSeq: i + 1, update: { kind: 'message.delta' as const, text: 'hello world ' } },
});

/** Events per second of `fn` appending `n` events. */
function rate(n: number, fn: () => void): number {
  const t = performance.now();
  fn();
  return n / ((performance.now() - t) / 1000);
}

/** The three append modes on one store; `n` events each (`batchOnly`: the batched mode alone). */
function measure(options: StoreOptions, n: number, batchOnly = false): Record<string, number> {
  const store = Store.open(options);
  try {
    const one = store.ensureSession('default', 'b', 'one').sessionId;
    const many = Array.from({ length: 100 }, (_, i) => store.ensureSession('default', 'b', `many-${i}`).sessionId);
    const out: Record<string, number> = {};
    if (!batchOnly) {
      for (let i = 0; i < 100; i++) store.append(one, [delta(i)]); // warm-up: statements prepared, caches filled
      out.singleSession = rate(n, () => {
        for (let i = 0; i < n; i++) store.append(one, [delta(i)]);
      });
      out.hundredSessions = rate(n, () => {
        for (let i = 0; i < n; i++) store.append(many[i % 100]!, [delta(i)]);
      });
    }
    out.batched100 = rate(n, () => {
      for (let b = 0; b < n / 100; b++)
        store.appendMany(Array.from({ length: 100 }, (_, j) => ({ sessionId: many[j]!, event: delta(b * 100 + j) })));
    });
    return out;
  } finally {
    store.close();
  }
}

/** The figures of docs/benchmarks.md "Event append, SQLite vs PostgreSQL" (npx tsx bench/run.ts pg-append). */
export async function pgAppendBench(): Promise<Record<string, unknown>> {
  console.log('\n## Event append through the Store: SQLite vs PostgreSQL');
  const dir = mkdtempSync(join(tmpdir(), 'paddock-bench-pgappend-'));
  const tcpPort = 20_000 + ((process.pid + 7) % 20_000);
  const cluster = startPgCluster({ port: tcpPort, fsync: true });
  const proxy = await delayProxy(tcpPort, 1);
  const n = Number(process.env.PADDOCK_BENCH_N ?? 5_000);
  const results: Record<string, Record<string, number>> = {};
  try {
    results.sqlite = measure({ dataDir: join(dir, 'sqlite') }, n);
    results.sqliteFull = measure({ dataDir: join(dir, 'sqlite-full'), durability: 'full' }, n);
    results.postgres = measure({ dataDir: join(dir, 'pg'), databaseUrl: cluster.url }, n);
    const far = `postgresql://postgres@127.0.0.1:${proxy.port}/paddock`;
    // A second database on the same cluster would need a CREATE DATABASE; the proxy's run reuses `paddock` after the
    // socket run, so its sessions are new ones in a database that already holds the socket run's events.
    results.postgresFar = measure({ dataDir: join(dir, 'pg-far'), databaseUrl: far }, Math.min(n, 2_000), true);
    const base = results.sqlite;
    const row = (label: string, key: string) => {
      const cells = Object.entries(results)
        .filter(([, r]) => r[key] !== undefined)
        .map(([store, r]) => `${store} ${fmt(r[key]! / 1000, 2)}k/s (${fmt(r[key]! / base[key]!, 3)}×)`);
      console.log(`${label.padEnd(34)} ${cells.join(' | ')}`);
    };
    row('1 session, one transaction each', 'singleSession');
    row('100 sessions, one transaction each', 'hundredSessions');
    row('appendMany, 100 per transaction', 'batched100');
    console.log(
      `method: ${n} events per mode (${Math.min(n, 2_000)} through the proxy) after 100 warm-up appends; ` +
        'Store.append / appendMany as the host calls them (event, view rows, seq read under the writer lock); ' +
        'ratios to SQLite (WAL, NORMAL) in the same run. PostgreSQL 15 at its defaults on its Unix socket; ' +
        '"Far": TCP through a proxy adding 1 ms.',
    );
  } finally {
    proxy.stop();
    cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return results;
}
