import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { bundle, hostRun } from './harness.js';
import { fmt, summarize } from './stats.js';

/** Sequential runner → host request round trip (state/get) vs a raw line echo over a pipe. */
export async function roundTrip(count = 5_000) {
  const script = await bundle('bench/runners/requester.ts');
  const outcome = await hostRun(script, {
    config: { count },
    grants: ['state/get'],
    hostRequests: { handle: async () => ({ found: false }) },
  });
  if (outcome.status !== 'completed') throw new Error(`${outcome.status}: ${outcome.reason}`);
  const times = JSON.parse((outcome.result!.output!.parts[0] as { text: string }).text) as number[];
  const host = summarize(times.slice(200)); // drop warm-up

  const echo = spawn(process.execPath, [new URL('./baselines/lineEcho.mjs', import.meta.url).pathname], {
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  const lines = createInterface({ input: echo.stdout });
  const waiters: (() => void)[] = [];
  lines.on('line', () => waiters.shift()?.());
  const raw: number[] = [];
  const message = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'state/get', params: { runId: 'run_x', key: 'k' } });
  for (let i = 0; i < count; i++) {
    const t = performance.now();
    await new Promise<void>((resolve) => {
      waiters.push(resolve);
      echo.stdin.write(`${message}\n`);
    });
    raw.push(performance.now() - t);
  }
  echo.kill();
  const base = summarize(raw.slice(200));
  console.log(`\n## Runner → host request round trip (${count} sequential state/get, first 200 dropped)`);
  console.log('method: host = measured inside the runner around ctx.state.get() (SDK request, NDJSON, host');
  console.log('        validation, run-scope + grant checks, handler, answer, result validation); baseline = a');
  console.log('        parent writing the same JSON line to a child that echoes lines back (readline both ways).');
  console.log(`host:     median ${fmt(host.median * 1000, 0)} µs, p99 ${fmt(host.p99 * 1000, 0)} µs`);
  console.log(`raw pipe: median ${fmt(base.median * 1000, 0)} µs, p99 ${fmt(base.p99 * 1000, 0)} µs`);
  console.log(`ratio host / raw (median): ${fmt(host.median / base.median, 2)}×`);
  return { hostMs: host, rawMs: base, ratio: host.median / base.median };
}
