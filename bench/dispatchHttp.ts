// Dispatch over HTTP: a chat event POSTed to a `paddock serve` child until its `run.ended` is seen on the run's SSE
// stream, against the same event through the in-process Dispatcher (to its outcome), same runner, same binding.
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyConfig } from '../host/bindings/apply.js';
import { parseLimits } from '../host/config/limits.js';
import { configureContainer } from '../host/di/configure.js';
import { TOKENS } from '../host/di/tokens.js';
import { discoverRunners } from '../host/plugins/catalog.js';
import { createApiToken } from '../host/state/apiTokens.js';
import { startBenchServe } from './serveChild.js';
import { fmt, summarize } from './stats.js';

const BINDINGS = {
  bindings: [{ id: 'echo', runner: 'echo', sandbox: 'process', route: { platform: 'bench', bot: 'echo' } }],
};

/** A host container on a fresh data folder with the bench binding applied. */
function host(dataDir: string) {
  const config = { dataDir, limits: parseLimits(), runnerDirs: [], logLevel: 'silent', keepWorkspaces: false };
  const container = configureContainer(config);
  const store = container.resolve(TOKENS.Store);
  applyConfig(store, BINDINGS, { catalog: discoverRunners([]), mountRoots: [] }, { by: 'bench' });
  return { store, dispatcher: container.resolve(TOKENS.Dispatcher) };
}

const event = (id: string) => ({
  id,
  platform: 'bench',
  bot: 'echo',
  conversation: { type: 'private' as const, id: `c-${id}` },
  sender: { id: 'u' },
  message: { parts: [{ type: 'text' as const, text: 'hello bench' }] },
  receivedAt: new Date().toISOString(),
});

/** GET an SSE stream until a `run.ended` message; resolves when it is seen (the response is then cut). */
function untilRunEnded(url: string, token: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`stream answered ${res.statusCode}`));
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
        if (/\nevent: run\.ended\n[^\n]*\n\n/.test(text)) {
          req.destroy();
          resolve();
        }
      });
      res.on('end', () => reject(new Error('stream ended without run.ended')));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Dispatch latency over HTTP against a `paddock serve` child vs the in-process Dispatcher, interleaved. */
export async function dispatchHttpBench(count = 30, warmup = 5) {
  const served = mkdtempSync(join(tmpdir(), 'paddock-bench-http-'));
  const local = mkdtempSync(join(tmpdir(), 'paddock-bench-inproc-'));
  const seed = host(served);
  const { token } = createApiToken(seed.store, { tenant: 'default', role: 'platform', by: 'bench' });
  seed.store.close();
  const inproc = host(local);
  const loadBefore = loadavg();
  const serve = await startBenchServe(served, ['--rate', '1000', '--burst', '1000']);
  const http: number[] = [];
  const accepted: number[] = [];
  const direct: number[] = [];
  const directAccepted: number[] = [];
  for (let i = 0; i < count + warmup; i++) {
    let t = performance.now();
    const res = await fetch(`${serve.url}/v1/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(event(`h${i}`)),
    });
    const answer = (await res.json()) as { status: string; links: { runEvents: string } };
    if (res.status !== 202 || answer.status !== 'started') throw new Error(`dispatch answered ${res.status}`);
    const acceptedMs = performance.now() - t;
    await untilRunEnded(`${serve.url}${answer.links.runEvents}`, token);
    if (i >= warmup) {
      http.push(performance.now() - t);
      accepted.push(acceptedMs);
    }
    t = performance.now();
    const ticket = await inproc.dispatcher.dispatch(event(`d${i}`));
    if (i >= warmup) directAccepted.push(performance.now() - t);
    if (ticket.status === 'duplicate') throw new Error('duplicate');
    const outcome = await ticket.done;
    if (outcome.status !== 'completed') throw new Error(outcome.reason);
    if (i >= warmup) direct.push(performance.now() - t);
  }
  const loadAfter = loadavg();
  await serve.stop();
  inproc.store.close();
  rmSync(served, { recursive: true, force: true });
  rmSync(local, { recursive: true, force: true });
  const h = summarize(http);
  const a = summarize(accepted);
  const d = summarize(direct);
  const da = summarize(directAccepted);
  const load = (l: number[]) => l.map((x) => fmt(x, 2)).join(' / ');
  console.log(
    `\n## Dispatch over HTTP vs in-process (bench/dispatchHttp.ts; ${count} each, interleaved, ${warmup} dropped)`,
  );
  console.log('method: POST /v1/events to a `paddock serve` child, then GET the run stream (links.runEvents) until');
  console.log(
    '        its run.ended message; vs Dispatcher.dispatch() of the same event in this process to ticket.done.',
  );
  console.log(
    '        One echo binding (sandbox: process) each, on two fresh data folders; keep-alive fetch for the POST.',
  );
  console.log(
    `http:       median ${fmt(h.median, 1)} ms, p95 ${fmt(h.p95, 1)} ms ` +
      `(202 answered: median ${fmt(a.median, 1)} ms, p95 ${fmt(a.p95, 1)} ms)`,
  );
  console.log(
    `in-process: median ${fmt(d.median, 1)} ms, p95 ${fmt(d.p95, 1)} ms (dispatch() returning: median ` +
      `${fmt(da.median, 1)} ms, p95 ${fmt(da.p95, 1)} ms)`,
  );
  console.log(`ratio http / in-process: median ${fmt(h.median / d.median, 2)}×, p95 ${fmt(h.p95 / d.p95, 2)}×`);
  console.log(`loadavg (1/5/15 min): before ${load(loadBefore)}, after ${load(loadAfter)}`);
  return { http: h, accepted: a, inProcess: d, inProcessAccepted: da, loadBefore, loadAfter };
}

if (import.meta.url === `file://${process.argv[1]}`) await dispatchHttpBench();
