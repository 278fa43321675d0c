import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyConfig } from '../host/bindings/apply.js';
import { parseLimits } from '../host/config/limits.js';
import { configureContainer } from '../host/di/configure.js';
import { TOKENS } from '../host/di/tokens.js';
import { discoverRunners } from '../host/plugins/catalog.js';
import { fmt, summarize } from './stats.js';

/**
 * A chat event through `dispatch` (validate, dedupe, route, project, queue, run) vs the same
 * event through `runAdHoc` (no binding), both with the built-in echo runner and a real store.
 */
export async function dispatchBench(count = 40) {
  const dataDir = mkdtempSync(join(tmpdir(), 'paddock-bench-dispatch-'));
  const config = { dataDir, limits: parseLimits(), runnerDirs: [], logLevel: 'silent', keepWorkspaces: false };
  const container = configureContainer(config);
  const store = container.resolve(TOKENS.Store);
  const dispatcher = container.resolve(TOKENS.Dispatcher);
  const runs = container.resolve(TOKENS.RunService);
  applyConfig(
    store,
    {
      resources: {
        models: Array.from({ length: 20 }, (_, i) => ({ id: `m${i}`, provider: 'scripted', model: `m${i}` })),
      },
      bindings: Array.from({ length: 50 }, (_, i) => ({
        id: `b${i}`,
        runner: 'echo',
        route: { platform: 'bench', bot: `bot${i}` },
        grants: { state: 'session', models: ['m1', 'm2'] },
      })),
    },
    { catalog: discoverRunners([]), mountRoots: [] },
    { by: 'bench' },
  );
  const event = (i: number) => ({
    id: `e${i}`,
    platform: 'bench',
    bot: 'bot7',
    conversation: { type: 'private' as const, id: `c${i % 4}` },
    sender: { id: 'u' },
    message: { parts: [{ type: 'text' as const, text: 'hello bench' }] },
    receivedAt: new Date().toISOString(),
  });
  const viaDispatch: number[] = [];
  const adHoc: number[] = [];
  const accept: number[] = [];
  for (let i = 0; i < count + 5; i++) {
    let t = performance.now();
    const ticket = await dispatcher.dispatch(event(i));
    const accepted = performance.now() - t;
    if (ticket.status === 'duplicate') throw new Error('duplicate');
    const outcome = await ticket.done;
    if (outcome.status !== 'completed') throw new Error(outcome.reason);
    if (i >= 5) {
      viaDispatch.push(performance.now() - t);
      accept.push(accepted);
    }
    t = performance.now();
    const direct = await runs.runAdHoc({ runner: 'echo', event: event(100_000 + i) });
    if (direct.status !== 'completed') throw new Error(direct.reason);
    if (i >= 5) adHoc.push(performance.now() - t);
  }
  store.close();
  rmSync(dataDir, { recursive: true, force: true });
  const d = summarize(viaDispatch);
  const a = summarize(adHoc);
  const acc = summarize(accept);
  console.log(`\n## Dispatch vs ad-hoc run (${count} runs each, interleaved, first 5 dropped; 50 bindings, 20 models)`);
  console.log('method: wall time from dispatch(event) to the outcome, vs RunService.runAdHoc with the same');
  console.log('        event; both spawn the bundled echo runner and commit every event to a real SQLite store.');
  console.log(
    `dispatch: median ${fmt(d.median, 1)} ms, p99 ${fmt(d.p99, 1)} ms (dispatch() returning, which includes ` +
      `the run's first set-up steps: median ${fmt(acc.median, 2)} ms)`,
  );
  console.log(`ad hoc:   median ${fmt(a.median, 1)} ms, p99 ${fmt(a.p99, 1)} ms`);
  console.log(`ratio dispatch / ad hoc (median): ${fmt(d.median / a.median, 2)}×`);
  return { dispatch: d, adHoc: a, accept: acc };
}
