// Health under SSE catch-ups: /healthz latency of a `paddock serve` child while 40 streams (clients in a third
// process) each replay a 2.7 MB session from the start — the outside attack of issue 13 that delayed /healthz ~2 s.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { createApiToken } from '../host/state/apiTokens.js';
import { Store } from '../host/state/store.js';
import { startBenchServe } from './serveChild.js';
import { fmt, summarize } from './stats.js';

/**
 * 40 streams of one token: over the default cap of 16 (the first guard), so the cap is raised to measure what the
 * server does with that many catch-ups at once (many tokens, or a raised cap). PADDOCK_BENCH_ROOT=<another built
 * paddock folder> measures that build instead (before/after); it may not know the flag: PADDOCK_BENCH_NO_CAP=1.
 */
const STREAM_CAP = process.env.PADDOCK_BENCH_NO_CAP ? [] : ['--max-streams-per-token', '64'];

/** One GET /healthz, in ms. */
async function probe(url: string): Promise<number> {
  const t = performance.now();
  const res = await fetch(`${url}/healthz`);
  await res.text();
  if (res.status !== 200) throw new Error(`/healthz answered ${res.status}`);
  return performance.now() - t;
}

/** /healthz latency idle and during 40 catch-ups of a 2.7 MB session. */
export async function sseCatchupBench(streams = 40, events = 6000) {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-bench-catchup-'));
  const store = Store.open({ dataDir: dir });
  const { sessionId } = store.ensureSession('default', 'bench', 'catchup');
  const text = 'x'.repeat(330);
  for (let i = 0; i < events; i += 100)
    store.transaction(() => {
      for (let j = i; j < i + 100; j++)
        store.append(sessionId, [
          {
            type: 'run.update',
            runId: 'run_bench',
            data: { runnerSeq: j + 1, update: { kind: 'message.delta', text } },
          },
        ]);
    });
  const { token } = createApiToken(store, { tenant: 'default', role: 'platform', by: 'bench' });
  const bytes = store.readEvents(sessionId).reduce((n, e) => n + JSON.stringify(e).length, 0);
  store.close();
  const serve = await startBenchServe(dir, ['--rate', '1000', '--burst', '1000', ...STREAM_CAP]);
  const idle: number[] = [];
  for (let i = 0; i < 30; i++) idle.push(await probe(serve.url));

  const clients = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(import.meta.dirname, 'sseClients.ts'),
      `${serve.url}/v1/sessions/${sessionId}/events`,
      `${streams}`,
      `${events + 1}`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, SSE_TOKEN: token } },
  );
  const lines = createInterface({ input: clients.stdout! });
  let done = false;
  const t0 = performance.now();
  let doneAt = 0;
  lines.on('line', (line) => {
    if (line === 'done') {
      done = true;
      doneAt = performance.now();
    }
  });
  const busy: number[] = [];
  while (!done) {
    const ms = await probe(serve.url);
    // Every probe from the clients' start counts: the streams' catch-ups begin as each one connects.
    if (!done) busy.push(ms);
  }
  clients.kill();
  const load = loadavg();
  await serve.stop();
  rmSync(dir, { recursive: true, force: true });
  const i = summarize(idle);
  const b = summarize(busy);
  console.log(`\n## /healthz during SSE catch-ups (bench/sseCatchup.ts)`);
  console.log(
    `method: a \`paddock serve\` child; one session of ${events} run.update events ` +
      `(${fmt(bytes / 2 ** 20, 2)} MiB as ` +
      `stored JSON); ${streams} clients in another process each stream it from seq 0; this process GETs /healthz ` +
      `back to back, from the clients' start until every client has every event.`,
  );
  console.log(`idle: median ${fmt(i.median, 2)} ms, p95 ${fmt(i.p95, 2)} ms, max ${fmt(Math.max(...idle), 2)} ms`);
  console.log(
    `during ${streams} catch-ups (${fmt(doneAt - t0, 0)} ms, ${b.n} probes): median ${fmt(b.median, 2)} ms, ` +
      `p95 ${fmt(b.p95, 2)} ms, max ${fmt(Math.max(...busy), 2)} ms`,
  );
  console.log(`loadavg (1/5/15 min) at the end: ${load.map((x) => fmt(x, 2)).join(' / ')}`);
  return { idle: i, busy: { ...b, max: Math.max(...busy) }, catchupMs: doneAt - t0, bytes, loadavg: load };
}

if (import.meta.url === `file://${process.argv[1]}`) await sseCatchupBench();
