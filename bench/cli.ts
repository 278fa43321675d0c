// CLI start-up: what a new user waits for on each `paddock` command, against `node -e 0` (Node's own start) and,
// for a dispatch, against the run's own duration as its events record it.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fmt, summarize } from './stats.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const BIN = join(ROOT, 'bin/paddock.js');
/**
 * PADDOCK_BENCH_COMPARE=<another paddock package folder, built>: its `runs list` and `dispatch` are measured in the
 * same rounds as this one's (before/after builds interleaved, so the shared machine's load falls on both alike).
 */
const COMPARE = process.env.PADDOCK_BENCH_COMPARE;
const COMPARE_BIN = COMPARE ? join(COMPARE, 'bin/paddock.js') : undefined;
/** PADDOCK_BENCH_ROUNDS: rounds (default 15). */
const ROUNDS = Number(process.env.PADDOCK_BENCH_ROUNDS ?? 15);
/** The `paddock` command as it was before the build (tsx transpiling host/ on every call), measured in the same run. */
const TSX_CLI = ['--import', 'tsx', join(ROOT, 'host/cli/entry.ts')];

/**
 * GNU time: the command's CPU time (user + sys), which the other engineers' load on this shared machine inflates far
 * less than wall time.
 */
const GNU_TIME = '/usr/bin/time';

/** Wall and CPU time of one `node <args>`, in ms; its stdout. Fails loudly on a non-zero exit. */
function timed(args: string[], env: NodeJS.ProcessEnv): { ms: number; cpuMs: number; stdout: string } {
  if (!existsSync(GNU_TIME))
    throw new Error(`${GNU_TIME} is missing (Debian package "time"): the CLI bench reports CPU time too`);
  const cpuFile = join(tmpdir(), `paddock-bench-cpu-${process.pid}`);
  const t = performance.now();
  // cwd: the package, so tsx (the "before" baseline) reads paddock's tsconfig as the old bin made it do.
  const r = spawnSync(GNU_TIME, ['-f', '%U %S', '-o', cpuFile, process.execPath, ...args], {
    cwd: ROOT,
    env,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 64 * 1024 * 1024,
  });
  const ms = performance.now() - t;
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status ?? r.signal}: ${r.stderr}`);
  const [user, sys] = readFileSync(cpuFile, 'utf8').trim().split(/\s+/).slice(-2).map(Number);
  return { ms, cpuMs: ((user ?? NaN) + (sys ?? NaN)) * 1000, stdout: r.stdout };
}

/**
 * The run's own duration from its recorded events: run.queued → run.ended (`paddock runs show`, outside the timing).
 */
function runDuration(runId: string, env: NodeJS.ProcessEnv): number {
  const shown = JSON.parse(timed([BIN, 'runs', 'show', runId, '--json'], env).stdout) as {
    events: { type: string; at: string }[];
  };
  const at = (type: string) => Date.parse(shown.events.find((e) => e.type === type)?.at ?? 'missing');
  const ms = at('run.ended') - at('run.queued');
  if (!Number.isFinite(ms)) throw new Error(`run ${runId} has no run.queued/run.ended events`);
  return ms;
}

/**
 * `paddock --help`, `paddock runs list` and a `dispatch` of echo, interleaved with `node -e 0`, after one warm-up each.
 */
export async function cliBench(iterations = ROUNDS): Promise<Record<string, unknown>> {
  const data = mkdtempSync(join(tmpdir(), 'paddock-bench-cli-'));
  const env = { ...process.env, PADDOCK_HOME: data, NO_COLOR: '1' };
  const config = join(data, 'paddock.yaml');
  // The binding a new user writes first: echo, default sandbox (bwrap).
  writeFileSync(config, 'bindings:\n  - id: bench\n    runner: echo\n    route: { platform: telegram, bot: bench }\n');
  timed([BIN, 'apply', '-f', config], env);
  let n = 0;
  const dispatch = (bin = BIN) => {
    const file = join(data, `event-${n}.json`);
    const conversation = { type: 'group', id: `c${n}` };
    const event = {
      id: `evt-bench-${n++}`,
      type: 'message',
      platform: 'telegram',
      bot: 'bench',
      conversation,
      sender: { id: 'u1', name: 'Ada' },
    };
    writeFileSync(
      file,
      JSON.stringify({
        ...event,
        message: { parts: [{ type: 'text', text: 'hi' }] },
        receivedAt: new Date().toISOString(),
      }),
    );
    const r = timed([bin, 'dispatch', '-f', file, '--json'], env);
    const outcome = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { type: string; outcome?: { runId: string; status: string } })
      .find((l) => l.type === 'outcome')?.outcome;
    if (outcome?.status !== 'completed') throw new Error(`bench dispatch did not complete: ${r.stdout.slice(-500)}`);
    return { ...r, run: runDuration(outcome.runId, env) };
  };
  const commands: Record<string, () => { ms: number; cpuMs: number }> = {
    'node -e 0': () => timed(['-e', '0'], env),
    'paddock --help': () => timed([BIN, '--help'], env),
    'paddock --help via tsx (before)': () => timed([...TSX_CLI, '--help'], env),
    'paddock runs list': () => timed([BIN, 'runs', 'list'], env),
    ...(COMPARE_BIN ? { 'paddock runs list (compare)': () => timed([COMPARE_BIN, 'runs', 'list'], env) } : {}),
  };
  // Warm-up: page cache, and the echo bundle built once (a first run compiles it).
  for (const command of Object.values(commands)) command();
  dispatch();
  if (COMPARE_BIN) dispatch(COMPARE_BIN);
  const wall: Record<string, number[]> = {};
  const cpu: Record<string, number[]> = {};
  const record = (name: string, r: { ms: number; cpuMs: number }) => {
    (wall[name] ??= []).push(r.ms);
    (cpu[name] ??= []).push(r.cpuMs);
  };
  const runMs: number[] = [];
  const outsideRunMs: number[] = [];
  const compareRunMs: number[] = [];
  const compareOutsideMs: number[] = [];
  for (let i = 0; i < iterations; i++) {
    for (const [name, command] of Object.entries(commands)) record(name, command());
    // The compared build goes first on odd rounds: neither always runs right after the other.
    const order = COMPARE_BIN && i % 2 === 1 ? [COMPARE_BIN, BIN] : [BIN, ...(COMPARE_BIN ? [COMPARE_BIN] : [])];
    for (const bin of order) {
      const d = dispatch(bin);
      const compared = bin !== BIN;
      record(`paddock dispatch (echo, bwrap)${compared ? ' (compare)' : ''}`, d);
      (compared ? compareRunMs : runMs).push(d.run);
      (compared ? compareOutsideMs : outsideRunMs).push(d.ms - d.run);
    }
  }
  const base = { wall: summarize(wall['node -e 0']!).median, cpu: summarize(cpu['node -e 0']!).median };
  const rows = Object.keys(wall).map((name) => {
    const w = summarize(wall[name]!);
    const c = summarize(cpu[name]!);
    return { name, wall: w, cpu: c, overheadMs: w.median - base.wall, cpuOverheadMs: c.median - base.cpu };
  });
  const run = summarize(runMs);
  const outside = summarize(outsideRunMs);
  const dispatchOverhead = outside.median - base.wall;
  console.log(
    `\n## CLI start-up (${iterations} rounds, interleaved, after one warm-up each; data folder with ` +
      `${(iterations + 1) * (COMPARE_BIN ? 2 : 1)} runs)`,
  );
  console.log('method: `node <args>` from spawn to exit (spawnSync under GNU time): wall, and CPU = user + sys of the');
  console.log(
    '        process and the children it reaped; overhead = median − median of `node -e 0` in the same rounds.',
  );
  console.log(
    "        A dispatch also against its run's own duration, run.queued → run.ended from its recorded events.",
  );
  for (const r of rows) {
    console.log(
      `${r.name.padEnd(44)} wall median ${fmt(r.wall.median)} ms (p90 ${fmt(r.wall.p90)}), overhead ` +
        `${fmt(r.overheadMs)} ms;` +
        ` CPU median ${fmt(r.cpu.median, 0)} ms, overhead ${fmt(r.cpuOverheadMs, 0)} ms`,
    );
  }
  console.log(
    `  the dispatch's run, queued → ended: median ${fmt(run.median)} ms; outside the run (wall − run): median ` +
      `${fmt(outside.median)} ms → overhead over node -e 0 ${fmt(dispatchOverhead)} ms`,
  );
  if (COMPARE_BIN) {
    const crun = summarize(compareRunMs);
    const coutside = summarize(compareOutsideMs);
    console.log(
      `  compared build (${COMPARE}): its dispatch's run median ${fmt(crun.median)} ms; outside the run median ` +
        `${fmt(coutside.median)} ms → overhead over node -e 0 ${fmt(coutside.median - base.wall)} ms`,
    );
  }
  const verdict = (ms: number) => (ms <= 250 ? 'meets' : 'misses');
  const overheadOf = (name: string) => rows.find((r) => r.name === name)!.overheadMs;
  console.log(
    `target (wall overhead ≤ 250 ms median): --help ${verdict(overheadOf('paddock --help'))}, runs list ` +
      `${verdict(overheadOf('paddock runs list'))}, dispatch ${verdict(dispatchOverhead)} it.`,
  );
  return { rows, run, outsideRun: outside, dispatchOverheadMs: dispatchOverhead };
}
