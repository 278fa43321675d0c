import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { spawnRunner } from '../host/process/spawnRunner.js';
import { fmt, summarize } from './stats.js';

/** The main thread's own CPU milliseconds so far. */
const cpuMs = () => Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;

/** One way to start `/bin/true`: the host's own `spawn()` (before) or the runner spawner (now). */
async function once(how: 'direct' | 'spawner'): Promise<{ block: number; cpu: number }> {
  const [t, c] = [performance.now(), cpuMs()];
  let block: number;
  if (how === 'direct') {
    const child = spawn('/bin/true', [], { detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    block = performance.now() - t;
    await new Promise((r) => child.once('exit', r));
  } else {
    const started = spawnRunner({ command: '/bin/true', args: [], cwd: '/', env: {} });
    block = performance.now() - t;
    const proc = await started;
    await new Promise((r) => proc.child.once('exit', r));
  }
  return { block, cpu: cpuMs() - c };
}

/**
 * What starting a runner costs the host's main thread, the host's own fork (the code before MR1) against the runner
 * spawner, alternated in one process grown to `PADDOCK_BENCH_SPAWN_MIB` (default 220: the host's RSS with 200 runs).
 */
export async function spawnCostBench() {
  const ballast = Buffer.alloc(Number(process.env.PADDOCK_BENCH_SPAWN_MIB ?? 220) * 2 ** 20, 1);
  const rounds = Number(process.env.PADDOCK_BENCH_SPAWN_ROUNDS ?? 30);
  await once('spawner'); // the spawner is up
  const figures = { direct: [] as { block: number; cpu: number }[], spawner: [] as { block: number; cpu: number }[] };
  for (let i = 0; i < rounds; i++) for (const how of ['direct', 'spawner'] as const) figures[how].push(await once(how));
  const rss = process.memoryUsage().rss / 2 ** 20;
  console.log(`\n## Starting a runner: the host's main thread (RSS ${fmt(rss, 0)} MiB, ${rounds} rounds, alternated)`);
  console.log('| how | blocked in the call p50 / p99 | main-thread CPU to exit p50 / p99 |');
  console.log('| --- | --- | --- |');
  const out: Record<string, unknown> = { rssMiB: rss, ballast: ballast.length };
  for (const how of ['direct', 'spawner'] as const) {
    const block = summarize(figures[how].map((f) => f.block));
    const cpu = summarize(figures[how].map((f) => f.cpu));
    console.log(
      `| ${how} | ${fmt(block.median, 2)} / ${fmt(block.p99, 2)} ms | ${fmt(cpu.median, 2)} / ${fmt(cpu.p99, 2)} ms |`,
    );
    out[how] = { block, cpu };
  }
  return out;
}
