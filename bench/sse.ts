import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { EventStreams } from '../host/api/streams/index.js';
import { Store, type NewEvent } from '../host/state/store.js';
import { fmt } from './stats.js';

const delta = (i: number): NewEvent => ({
  type: 'run.update',
  runId: 'run_bench',
  data: { runnerSeq: i + 1, update: { kind: 'message.delta', text: 'hello world, a streamed token or two ' } },
});
/** A full garbage collection, so RSS and heap figures hold live memory, not garbage not yet collected. */
function collect(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}
/** JS heap plus memory held outside it (socket buffers, Buffers), in MiB. */
const heapMiB = () => {
  const m = process.memoryUsage();
  return fmt((m.heapUsed + m.external) / 2 ** 20);
};
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Append `count` deltas in transactions of `per` (the run journal's group commit), yielding between them. */
async function appendAll(store: Store, sessionId: string, count: number, per = 50): Promise<void> {
  for (let i = 0; i < count; i += per) {
    store.transaction(() => {
      for (let j = i; j < Math.min(count, i + per); j++) store.append(sessionId, [delta(j)]);
    });
    await turn();
  }
}

/** The client process; resolves with it once every client is connected. */
async function clients(
  url: string,
  n: number,
  messages: number,
): Promise<{ child: ChildProcess; done: Promise<void> }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(import.meta.dirname, 'sseClients.ts'), url, `${n}`, `${messages}`],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const lines = createInterface({ input: child.stdout! });
  let connected!: () => void;
  let done!: () => void;
  const isConnected = new Promise<void>((r) => (connected = r));
  const isDone = new Promise<void>((r) => (done = r));
  lines.on('line', (line) => (line === 'connected' ? connected() : line === 'done' ? done() : undefined));
  await isConnected;
  return { child, done: isDone };
}

/** SSE fan-out (updates/s to 1, 10, 100 subscribers) against an in-process store listener; RSS with 500 clients. */
export async function sseBench(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-bench-sse-'));
  const store = Store.open({ dataDir: dir });
  const streams = new EventStreams(store);
  const server = createServer((req, res) => {
    const sessionId = decodeURIComponent(new URL(req.url!, 'http://x').pathname.slice(1));
    streams.serve(res, { sessionId, afterSeq: 0 });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const results: Record<string, unknown> = {};
  console.log('\n## SSE streams (host/api/streams: one store, node:http on loopback, clients in a second process)');
  console.log('method: COUNT message.delta events appended in transactions of 50 (one event-loop turn each); time');
  console.log('        = first append to the last client having counted every message. baseline = the same appends');
  console.log('        heard by one in-process store.subscribe listener (what the SSE cursor adds is store reads,');
  console.log('        framing and the socket). Delivered = COUNT × subscribers / time.');

  {
    const count = 20_000;
    const sessionId = store.ensureSession('default', 'bench', 'baseline').sessionId;
    let heard = 0;
    const off = store.subscribe(() => (heard += 1));
    const t = performance.now();
    await appendAll(store, sessionId, count);
    const rate = heard / ((performance.now() - t) / 1000);
    off();
    console.log(`baseline, in-process listener: ${fmt(rate / 1000)}k updates/s`);
    results.baseline = rate;
  }
  for (const [subscribers, count] of [
    [1, 20_000],
    [10, 10_000],
    [100, 2_000],
  ] as const) {
    const sessionId = store.ensureSession('default', 'bench', `fanout-${subscribers}`).sessionId;
    // +1: the session's own `session.created` event.
    const c = await clients(base + sessionId, subscribers, count + 1);
    const t = performance.now();
    await appendAll(store, sessionId, count);
    const appended = performance.now() - t;
    await c.done;
    const seconds = (performance.now() - t) / 1000;
    c.child.kill();
    const delivered = (count * subscribers) / seconds;
    console.log(
      `${String(subscribers).padStart(3)} subscriber(s): ${fmt(delivered / 1000)}k updates/s delivered ` +
        `(${fmt(count / seconds / 1000)}k/s each; appends alone took ${fmt(appended)} ms of ${fmt(seconds * 1000)} ms)`,
    );
    results[`fanout${subscribers}`] = { delivered, perSubscriber: count / seconds, count };
  }
  // Burst: every client connected first, then 10 000 events committed at once (transactions of 1 000, no
  // turn between them): the streams then read them in batches of 500, as a catch-up does, so the figure is the
  // stream's own capacity (store reads, framing, sockets), not the append rate.
  for (const subscribers of [1, 10, 100]) {
    const count = 10_000;
    const sessionId = store.ensureSession('default', 'bench', `burst-${subscribers}`).sessionId;
    const c = await clients(base + sessionId, subscribers, count + 1);
    const t = performance.now();
    for (let i = 0; i < count; i += 1000)
      store.transaction(() => {
        for (let j = i; j < i + 1000; j++) store.append(sessionId, [delta(j)]);
      });
    const appended = performance.now() - t;
    await c.done;
    const seconds = (performance.now() - t) / 1000;
    c.child.kill();
    const delivered = (count * subscribers) / seconds;
    console.log(
      `burst, ${String(subscribers).padStart(3)} subscriber(s): ${fmt(delivered / 1000)}k events/s delivered ` +
        `(${count} events each; their appends took ${fmt(appended)} ms of ${fmt(seconds * 1000)} ms)`,
    );
    results[`burst${subscribers}`] = { delivered, count, appendMs: appended };
  }
  {
    const n = 500;
    const count = 1_000;
    const sessionId = store.ensureSession('default', 'bench', 'rss').sessionId;
    await appendAll(store, sessionId, count);
    collect();
    const before = process.memoryUsage().rss;
    const heapBefore = heapMiB();
    const c = await clients(base + sessionId, n, count + 201);
    await appendAll(store, sessionId, 200);
    await c.done;
    collect();
    const after = process.memoryUsage().rss;
    console.log(
      `${n} concurrent clients (each caught up on ${count} events, then 200 live; after a full GC): server RSS ` +
        `${fmt(before / 2 ** 20)} → ${fmt(after / 2 ** 20)} MiB ` +
        `(+${fmt((after - before) / n / 1024)} KiB per client), ` +
        `heap + external ${heapBefore} → ${heapMiB()} MiB; ${streams.clients} streams open`,
    );
    results.rss500 = { before, after, clients: streams.clients };
    c.child.kill();
  }
  streams.endAll();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  store.close();
  rmSync(dir, { recursive: true, force: true });
  return results;
}
