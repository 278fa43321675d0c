import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyConfig } from '../host/bindings/apply.js';
import { parseLimits } from '../host/config/limits.js';
import { configureContainer } from '../host/di/configure.js';
import { TOKENS } from '../host/di/tokens.js';
import { discoverRunners } from '../host/plugins/catalog.js';
import { probeMachine, useMachineReportForTests } from '../host/sandbox/probe.js';
import { fmt, summarize } from './stats.js';

/** A process's resident and proportional set size in KiB (PSS splits shared pages among their users). */
function memoryOf(pid: number): { rssKiB: number; pssKiB: number } {
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(rollup)?.[1] ?? NaN);
  return { rssKiB: field('Rss'), pssKiB: field('Pss') };
}

/**
 * Dispatch → first update of the echo runner: a binding with a warm pool (docs/warm-pool.md) vs the same binding
 * without one (cold start), interleaved in one host; bwrap cold beside it when the machine has it (bwrap is not
 * pooled). Then the memory of each idle pooled runner.
 */
export async function warmStartBench(rounds = 30, poolSize = 4) {
  const machine = probeMachine();
  const withQuota = await warmStartPhase(
    rounds,
    poolSize,
    `this machine (disk quota: ${machine.diskQuota.available})`,
    true,
  );
  let withoutQuota = {};
  if (machine.diskQuota.available) {
    // The same runs where no quota filesystem is mounted per run: what the pool saves of the process start alone.
    useMachineReportForTests({ ...machine, diskQuota: { available: false, why: 'switched off for the bench' } });
    withoutQuota = await warmStartPhase(rounds, poolSize, 'the disk quota switched off (process start alone)', false);
    useMachineReportForTests(machine);
  }
  return { withQuota, withoutQuota };
}

async function warmStartPhase(rounds: number, poolSize: number, label: string, withBwrap: boolean) {
  const dataDir = mkdtempSync(join(tmpdir(), 'paddock-bench-warm-'));
  const config = { dataDir, limits: parseLimits(), runnerDirs: [], logLevel: 'silent', keepWorkspaces: false };
  const container = configureContainer(config);
  const store = container.resolve(TOKENS.Store);
  const dispatcher = container.resolve(TOKENS.Dispatcher);
  const pools = container.resolve(TOKENS.RunService).warmPools;
  const bwrap = withBwrap && probeMachine().bwrap.available;
  const binding = (id: string, warmPool: number, sandbox = 'process') => ({
    id,
    runner: 'echo',
    sandbox,
    route: { platform: 'bench', bot: id },
    limits: { warmPool },
    // Without the quota the host refuses a disk limit it cannot hold, unless the binding allows running without.
    allowDegrade: !probeMachine().diskQuota.available,
  });
  applyConfig(
    store,
    {
      bindings: [
        binding('cold', 0),
        binding('warm', poolSize),
        ...(bwrap ? [binding('bwrap-cold', 0, 'bwrap'), binding('bwrap-asked-warm', poolSize, 'bwrap')] : []),
      ],
    },
    { catalog: discoverRunners([]), mountRoots: [] },
    { by: 'bench' },
  );
  let n = 0;
  /** Wall time from dispatch() to the first update the host forwards; throws unless the run completed. */
  const firstUpdate = async (bot: string) => {
    let first = 0;
    const t = performance.now();
    const ticket = await dispatcher.dispatch(
      {
        id: `e${n++}`,
        platform: 'bench',
        bot,
        conversation: { type: 'private' as const, id: `c${n % 4}` },
        sender: { id: 'u' },
        message: { parts: [{ type: 'text' as const, text: 'hello bench' }] },
        receivedAt: new Date().toISOString(),
      },
      { onUpdate: () => (first ||= performance.now() - t) },
    );
    if (ticket.status === 'duplicate') throw new Error('duplicate');
    const outcome = await ticket.done;
    if (outcome.status !== 'completed') throw new Error(outcome.reason);
    return first;
  };
  const cold: number[] = [];
  const warm: number[] = [];
  const bwrapCold: number[] = [];
  const bwrapAsked: number[] = [];
  let idle: { rssKiB: number; pssKiB: number }[];
  try {
    for (const bot of ['cold', 'warm', ...(bwrap ? ['bwrap-cold', 'bwrap-asked-warm'] : [])]) await firstUpdate(bot);
    for (let i = 0; i < rounds; i++) {
      cold.push(await firstUpdate('cold'));
      await pools.filled(); // the pool is warm when the run is dispatched: the case the target is about
      warm.push(await firstUpdate('warm'));
      if (bwrap) {
        bwrapCold.push(await firstUpdate('bwrap-cold'));
        bwrapAsked.push(await firstUpdate('bwrap-asked-warm'));
      }
    }
    await pools.filled();
    idle = pools.idlePids('warm').map(memoryOf);
  } finally {
    // No pooled process, store or data folder outlives the bench, whatever failed.
    await pools.close();
    store.close();
    rmSync(dataDir, { recursive: true, force: true });
  }

  const c = summarize(cold);
  const w = summarize(warm);
  const rss = summarize(idle.map((m) => m.rssKiB / 1024));
  const pss = summarize(idle.map((m) => m.pssKiB / 1024));
  console.log(`\n## Warm start, ${label} (${rounds} rounds, interleaved; echo runner, pool of ${poolSize})`);
  console.log(
    'method: wall time from dispatcher.dispatch(event) to the first run/update the host forwards (onUpdate),',
  );
  console.log('        real store; cold = a binding without a pool (spawn, Node start, imports, initialize, run);');
  console.log(
    '        warm = the same binding with limits.warmPool, the pool refilled (filled()) before each dispatch.',
  );
  console.log(`cold → first update: median ${fmt(c.median)} ms, p99 ${fmt(c.p99)} ms`);
  console.log(`warm → first update: median ${fmt(w.median)} ms, p99 ${fmt(w.p99)} ms`);
  console.log(`ratio warm / cold (median): ${fmt(w.median / c.median, 3)}× (target ≤ 0.1×, ≤ 15 ms)`);
  console.log(
    `idle pooled runner (${idle.length}): RSS median ${fmt(rss.median)} MiB, PSS median ${fmt(pss.median)} MiB ` +
      '(PSS shares the pages the slots and the host map in common)',
  );
  let bwrapResult = {};
  if (bwrap) {
    const bc = summarize(bwrapCold);
    const ba = summarize(bwrapAsked);
    console.log(`bwrap cold → first update: median ${fmt(bc.median)} ms, p99 ${fmt(bc.p99)} ms`);
    console.log(
      `bwrap with warmPool set (not pooled: bwrap binds per-run folders at start): median ${fmt(ba.median)} ms, ` +
        `p99 ${fmt(ba.p99)} ms`,
    );
    bwrapResult = { bwrapCold: bc, bwrapAskedWarm: ba };
  } else console.log('bwrap: not available on this machine');
  return { cold: c, warm: w, ratio: w.median / c.median, idleRssMiB: rss, idlePssMiB: pss, ...bwrapResult };
}
