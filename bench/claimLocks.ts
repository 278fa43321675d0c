// Claims on PostgreSQL with row locks (stage 2, decision CL14) against claims under the cluster's writer lock (stage
// 1), in the same run: claimer processes, each a host with a lease of its own, claim runs of bindings of their own
// while appender processes write events (one per transaction, the writer lock's traffic). What is measured is how
// long a claim takes and how many the cluster makes per second, with and without that traffic.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { ClaimRequest } from '../host/state/claims.js';
import { registerHost } from '../host/state/hostLeases.js';
import { fenceRunWrites } from '../host/state/runFence.js';
import { Store } from '../host/state/store.js';
import { queryPg, startPgCluster } from '../test/helpers/pgCluster.js';
import { fmt, summarize } from './stats.js';

const CHILD = new URL('./claimLocksChild.ts', import.meta.url).pathname;

/** A started child: its first line was "ready"; `send` writes a line, `result` is its last line, parsed. */
async function child(args: string[]) {
  const proc = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: proc.stdout })[Symbol.asyncIterator]();
  if ((await lines.next()).value !== 'ready') throw new Error('a bench child did not start');
  return {
    send: () => proc.stdin.write('go\n'),
    result: (async () => JSON.parse((await lines.next()).value as string) as unknown)(),
  };
}

/** One round: `claimers` hosts claim `perClaimer` runs each while `appenders` processes append; its figures. */
async function round(url: string, dataDir: string, mode: 'rows' | 'writer', claimers: number, appenders: number) {
  const perClaimer = 300;
  const store = Store.open({ dataDir, databaseUrl: url });
  const jobs: { lease: { hostId: string; epoch: number }; requests: ClaimRequest[] }[] = [];
  for (let c = 0; c < claimers; c++) {
    const lease = registerHost(store, {
      hostId: `hst_bench_${mode}_${appenders}_${c}`,
      version: 'bench',
      leaseMs: 600_000,
    });
    fenceRunWrites(store, lease);
    const requests: ClaimRequest[] = [];
    for (let i = 0; i < perClaimer; i++) {
      const bindingId = `b_${mode}_${appenders}_${c}_${i % 10}`;
      const sessionId = store.ensureSession('default', bindingId, `c${i}`).sessionId;
      const runId = `run_${mode}_${appenders}_${c}_${i}`;
      store.append(sessionId, [
        { type: 'run.queued', runId, data: { runner: 'echo', goalRevision: 0, attempt: 1, bindingId } },
      ]);
      requests.push({ runId, sessionId, bindingId, maxPerBinding: 1_000, maxTotal: 10_000 });
    }
    jobs.push({ lease, requests });
  }
  store.close();
  const writers = await Promise.all(
    Array.from({ length: appenders }, (_, a) => child(['append', dataDir, url, `${mode}-${a}`])),
  );
  const takers = await Promise.all(jobs.map((job) => child(['claim', dataDir, url, JSON.stringify(job), mode])));
  for (const w of writers) w.send();
  const started = performance.now();
  for (const t of takers) t.send();
  const ms = ((await Promise.all(takers.map((t) => t.result))) as number[][]).flat();
  const seconds = (performance.now() - started) / 1000;
  for (const w of writers) w.send();
  const appended = ((await Promise.all(writers.map((w) => w.result))) as number[]).reduce((a, b) => a + b, 0);
  return { claimsPerSecond: ms.length / seconds, ...summarize(ms), appendsPerSecond: appended / seconds };
}

/** The figures of docs/benchmarks.md "Claims: row locks vs the writer lock" (npx tsx bench/run.ts claim-locks). */
export async function claimLocksBench(): Promise<Record<string, unknown>> {
  console.log('\n## Claims on PostgreSQL: row locks (stage 2) vs the writer lock (stage 1)');
  const dir = mkdtempSync(join(tmpdir(), 'paddock-bench-claims-'));
  const cluster = startPgCluster({ fsync: true });
  const results: Record<string, unknown> = {};
  try {
    for (const appenders of [0, 2])
      for (const mode of ['writer', 'rows'] as const) {
        queryPg(
          cluster.url,
          `CREATE DATABASE claims_${mode}_${appenders} TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C'`,
        );
        const url = cluster.url.replace(/\/paddock$/, `/claims_${mode}_${appenders}`);
        const r = await round(url, join(dir, `${mode}-${appenders}`), mode, 2, appenders);
        results[`${mode}_${appenders}appenders`] = r;
        console.log(
          `${mode === 'rows' ? 'row locks  ' : 'writer lock'} ${appenders} appender(s): ` +
            `${fmt(r.claimsPerSecond, 0)} claims/s, claim p50 ${fmt(r.median, 2)} ms p95 ${fmt(r.p95, 2)} ms ` +
            `p99 ${fmt(r.p99, 2)} ms; appends ${fmt(r.appendsPerSecond, 0)}/s`,
        );
      }
    console.log(
      'method: 2 claimer processes, each a host with its own lease, claim 300 queued runs each (one at a time, ' +
        '10 bindings of their own, no slot contention) while 0 or 2 appender processes append one event per ' +
        'transaction; "writer lock" wraps each claim in a writer-locked transaction (stage 1), "row locks" is ' +
        'tryClaim as shipped. A database per round on one PostgreSQL 15 (fsync on, Unix socket). Baseline: the ' +
        'writer lock, same round.',
    );
  } finally {
    cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return results;
}
