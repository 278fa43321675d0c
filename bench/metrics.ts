import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMetrics } from '../host/api/metrics/index.js';
import { Store } from '../host/state/store.js';
import { fmt, summarize } from './stats.js';

/** One synthetic run of `binding`, queued (and, when `end`, started and ended) through the store. */
function run(store: Store, sessionId: string, binding: string, i: number, end: boolean): void {
  const runId = `run_bench_${i}`;
  store.append(sessionId, [
    { type: 'run.queued', runId, data: { runner: 'bench', goalRevision: 1, attempt: 1, bindingId: binding } },
  ]);
  if (!end) return;
  store.append(sessionId, [
    { type: 'run.started', runId, data: { pid: process.pid, pidStart: null } },
    {
      type: 'run.ended',
      runId,
      data: { status: 'completed', reason: 'bench', exitCode: 0, signal: null, limits: ['wallClockMs'] },
    },
  ]);
}

/**
 * The cost of a `/metrics` scrape (render, gauges read from a store of 100 000 ended and 1 000 waiting runs, Node
 * defaults on) and of the run listener on the commit path (ending runs with and without the metrics subscribed).
 */
export async function metricsBench(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-bench-metrics-'));
  console.log('\n## Metrics (`GET /metrics` render; the run listener on the commit path)');
  const store = Store.open({ dataDir: dir });
  try {
    const sessions = Array.from(
      { length: 100 },
      (_, i) => store.ensureSession('default', `b${i % 20}`, `c${i}`).sessionId,
    );
    // Alternate rounds without and with the metrics listening, so the store's growth weighs on both alike.
    const n = 400;
    const rounds = 5;
    const cost = { bare: 0, observed: 0 };
    let i = 0;
    for (let r = 0; r < 2 * rounds; r++) {
      const m = r % 2 === 1 ? createMetrics(store, { defaultMetrics: false }) : undefined;
      const t = performance.now();
      for (const end = i + n; i < end; i++) run(store, sessions[i % 100]!, `b${i % 20}`, i, true);
      cost[m ? 'observed' : 'bare'] += performance.now() - t;
      m?.close();
    }
    const bare = cost.bare / (n * rounds);
    const observed = cost.observed / (n * rounds);
    const metrics = createMetrics(store);
    store.transaction(() => {
      for (; i < 100_000; i++) run(store, sessions[i % 100]!, `b${i % 20}`, i, true);
    });
    for (let i = 100_000; i < 101_000; i++) run(store, sessions[i % 100]!, `b${i % 20}`, i, false);
    for (let i = 0; i < 20; i++) await metrics.render(); // warm up
    const ms: number[] = [];
    let bytes = 0;
    for (let i = 0; i < 200; i++) {
      const s = performance.now();
      bytes = (await metrics.render()).length;
      ms.push(performance.now() - s);
    }
    const scrape = summarize(ms);
    console.log(
      `scrape: median ${fmt(scrape.median, 2)} ms, p99 ${fmt(scrape.p99, 2)} ms (${bytes} bytes; 20 bindings, ` +
        `100k ended + 1k waiting runs in the store)`,
    );
    console.log(
      `ending a run (queued+started+ended, 2 transactions): ${fmt(bare, 3)} ms bare, ${fmt(observed, 3)} ms with ` +
        `the metrics listening (+${fmt(observed - bare, 3)} ms)`,
    );
    metrics.close();
    return { scrapeMs: scrape, scrapeBytes: bytes, runEndMs: { bare, observed } };
  } finally {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
