// CLI start-up: what a new user waits for on each `paddock` command, against `node -e 0` (Node's own start) and,
// for a dispatch, against the run's own duration as its events record it.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fmt, summarize } from './stats.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const BIN = join(ROOT, 'bin/paddock.js');
/** The `paddock` bin as it was before the build (tsx transpiling host/ on every call), measured in the same run. */
const TSX_BIN = join(ROOT, 'bench/baselines/tsxBin.mjs');

/** Wall time of one command, in ms; its stdout. Fails loudly on a non-zero exit. */
function timed(args: string[], env: NodeJS.ProcessEnv): { ms: number; stdout: string } {
  const t = performance.now();
  const r = spawnSync(process.execPath, args, { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 });
  const ms = performance.now() - t;
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status ?? r.signal}: ${r.stderr}`);
  return { ms, stdout: r.stdout };
}

/** The run's own duration from its recorded events: run.queued → run.ended (`paddock runs show`, outside the timing). */
function runDuration(runId: string, env: NodeJS.ProcessEnv): number {
  const shown = JSON.parse(timed([BIN, 'runs', 'show', runId, '--json'], env).stdout) as { events: { type: string; at: string }[] };
  const at = (type: string) => Date.parse(shown.events.find((e) => e.type === type)?.at ?? 'missing');
  const ms = at('run.ended') - at('run.queued');
  if (!Number.isFinite(ms)) throw new Error(`run ${runId} has no run.queued/run.ended events`);
  return ms;
}

/** `paddock --help`, `paddock runs list` and a `dispatch` of echo, interleaved with `node -e 0`, after one warm-up each. */
export async function cliBench(iterations = 15): Promise<Record<string, unknown>> {
  const data = mkdtempSync(join(tmpdir(), 'paddock-bench-cli-'));
  const env = { ...process.env, PADDOCK_HOME: data, NO_COLOR: '1' };
  const config = join(data, 'paddock.yaml');
  // The binding a new user writes first: echo, default sandbox (bwrap).
  writeFileSync(config, 'bindings:\n  - id: bench\n    runner: echo\n    route: { platform: telegram, bot: bench }\n');
  timed([BIN, 'apply', '-f', config], env);
  let n = 0;
  const dispatch = () => {
    const file = join(data, `event-${n}.json`);
    const conversation = { type: 'group', id: `c${n}` };
    const event = { id: `evt-bench-${n++}`, type: 'message', platform: 'telegram', bot: 'bench', conversation, sender: { id: 'u1', name: 'Ada' } };
    writeFileSync(file, JSON.stringify({ ...event, message: { parts: [{ type: 'text', text: 'hi' }] }, receivedAt: new Date().toISOString() }));
    const r = timed([BIN, 'dispatch', '-f', file, '--json'], env);
    const outcome = r.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { type: string; outcome?: { runId: string; status: string } }).find((l) => l.type === 'outcome')?.outcome;
    if (outcome?.status !== 'completed') throw new Error(`bench dispatch did not complete: ${r.stdout.slice(-500)}`);
    return { ms: r.ms, run: runDuration(outcome.runId, env) };
  };
  // Warm-up: page cache, and the echo bundle built once (a first run compiles it).
  timed(['-e', '0'], env);
  timed([BIN, '--help'], env);
  timed([TSX_BIN, '--help'], env);
  dispatch();
  const node: number[] = [], help: number[] = [], helpTsx: number[] = [], list: number[] = [], wall: number[] = [], run: number[] = [], cli: number[] = [];
  for (let i = 0; i < iterations; i++) {
    node.push(timed(['-e', '0'], env).ms);
    help.push(timed([BIN, '--help'], env).ms);
    helpTsx.push(timed([TSX_BIN, '--help'], env).ms);
    list.push(timed([BIN, 'runs', 'list'], env).ms);
    const d = dispatch();
    wall.push(d.ms);
    run.push(d.run);
    cli.push(d.ms - d.run);
  }
  const s = { node: summarize(node), help: summarize(help), helpTsx: summarize(helpTsx), list: summarize(list), wall: summarize(wall), run: summarize(run), cli: summarize(cli) };
  const over = (x: { median: number }) => x.median - s.node.median;
  console.log(`\n## CLI start-up (${iterations} rounds, interleaved, after one warm-up each; data folder with ${iterations + 1} runs)`);
  console.log('method: wall time of `node bin/paddock.js <args>` from spawn to exit (spawnSync), against `node -e 0`;');
  console.log('        a dispatch also against its run\'s own duration, run.queued → run.ended from its recorded events.');
  console.log(`node -e 0:                        median ${fmt(s.node.median)} ms, p90 ${fmt(s.node.p90)} ms`);
  console.log(`paddock --help (dist/):           median ${fmt(s.help.median)} ms, p90 ${fmt(s.help.p90)} ms → overhead ${fmt(over(s.help))} ms`);
  console.log(`paddock --help via tsx (before):  median ${fmt(s.helpTsx.median)} ms, p90 ${fmt(s.helpTsx.p90)} ms → overhead ${fmt(over(s.helpTsx))} ms`);
  console.log(`paddock runs list:                median ${fmt(s.list.median)} ms, p90 ${fmt(s.list.p90)} ms → overhead ${fmt(over(s.list))} ms`);
  console.log(`paddock dispatch (echo, bwrap):   median ${fmt(s.wall.median)} ms, p90 ${fmt(s.wall.p90)} ms`);
  console.log(`  its run, queued → ended:        median ${fmt(s.run.median)} ms`);
  console.log(`  outside the run (wall − run):   median ${fmt(s.cli.median)} ms → overhead over node -e 0 ${fmt(over(s.cli))} ms`);
  console.log(`target: overhead ≤ 250 ms median. --help ${over(s.help) <= 250 ? 'meets' : 'misses'} it, runs list ${over(s.list) <= 250 ? 'meets' : 'misses'} it, dispatch ${over(s.cli) <= 250 ? 'meets' : 'misses'} it.`);
  return { ...s, overheadMs: { help: over(s.help), helpTsx: over(s.helpTsx), list: over(s.list), dispatch: over(s.cli) } };
}
