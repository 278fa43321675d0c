import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { applyConfig } from '../host/bindings/apply.js';
import { parseLimits } from '../host/config/limits.js';
import { configureContainer } from '../host/di/configure.js';
import { TOKENS } from '../host/di/tokens.js';
import type { Dispatcher, DispatchTicket } from '../host/dispatch/dispatcher.js';
import { discoverRunners } from '../host/plugins/catalog.js';
import { configureHelperSpawner, type HelperTiming } from '../host/sandbox/helperSpawner.js';
import type { RunOutcome } from '../host/process/outcome.js';
import { fmt, summarize } from './stats.js';

type Backend = 'process' | 'bwrap';

/** One held run: its ticket, when it was dispatched and when its first update arrived. */
interface Held {
  ticket: Promise<DispatchTicket>;
  dispatchedAt: number;
  firstUpdate: Promise<number>;
}

/** The main thread's busy milliseconds so far (event-loop utilisation's `active`: wall time, waits included). */
const busyMs = () => performance.eventLoopUtilization().active;

/** The main thread's own CPU milliseconds so far (the scheduler's figure: no other thread, no waiting). */
const cpuMs = () => Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;

/** How long this process's `spawn()` of `/bin/true` blocks it (the fork: grows with the process's memory). */
async function forkCost(rounds = 15): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t = performance.now();
    const child = spawn('/bin/true', [], { stdio: 'ignore' });
    times.push(performance.now() - t);
    await new Promise((r) => child.once('exit', r));
  }
  return summarize(times).median;
}

/** MiB the kernel says it can still hand out. */
const availableMiB = () => Number(/^MemAvailable:\s+(\d+)/m.exec(readFileSync('/proc/meminfo', 'utf8'))![1]) / 1024;

/** Every descendant pid of this process (runners, bwrap, their children), from /proc. */
function descendants(): number[] {
  const parent = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parent.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone
    }
  }
  const mine = new Set([process.pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const [pid, ppid] of parent)
      if (!mine.has(pid) && mine.has(ppid)) {
        mine.add(pid);
        grew = true;
      }
  }
  mine.delete(process.pid);
  return [...mine];
}

/** Summed RSS and PSS (kB → MiB) of `pids` (PSS shares pages among the processes that map them). */
function memoryOf(pids: number[]): { rssMiB: number; pssMiB: number } {
  let rss = 0;
  let pss = 0;
  for (const pid of pids) {
    try {
      const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
      rss += Number(/^Rss:\s+(\d+)/m.exec(text)?.[1] ?? 0);
      pss += Number(/^Pss:\s+(\d+)/m.exec(text)?.[1] ?? 0);
    } catch {
      // gone
    }
  }
  return { rssMiB: rss / 1024, pssMiB: pss / 1024 };
}

/** A host (container, store, one echo binding whose runs stay active until cancelled) on a fresh data folder. */
function openHost(backend: Backend) {
  const dataDir = mkdtempSync(join(tmpdir(), 'paddock-bench-many-'));
  const config = {
    dataDir,
    // A burst of hundreds starts hundreds of node processes on two shared cores: a run may need far more than the
    // default 10 s to answer initialize, which is the machine's CPU, not a failure of the run.
    limits: parseLimits({ handshakeTimeoutMs: 600_000, wallClockMs: 3_600_000 }),
    runnerDirs: [],
    logLevel: 'silent',
    keepWorkspaces: false,
    maxConcurrentRuns: 10_000,
    maxQueuedRuns: 10_000,
    maxQueuedRunsPerTenant: 10_000,
    // The helper spawner's bound (default: the host's own); `PADDOCK_BENCH_MANY_HELPERS` compares others.
    ...(process.env.PADDOCK_BENCH_MANY_HELPERS
      ? { helperConcurrency: Number(process.env.PADDOCK_BENCH_MANY_HELPERS) }
      : {}),
  };
  const container = configureContainer(config);
  const store = container.resolve(TOKENS.Store);
  const dispatcher = container.resolve<Dispatcher>(TOKENS.Dispatcher);
  applyConfig(
    store,
    {
      bindings: [
        {
          id: 'many',
          runner: 'echo',
          route: { platform: 'bench', bot: 'many' },
          sandbox: backend,
          // The echo runner sends its first update at once, then waits a minute before each word: held until
          // cancelled.
          config: { delayMs: 60_000 },
          // Held until the whole burst has started: a 400-run burst outlasts the echo manifest's 2 minutes.
          limits: { maxConcurrentRuns: 10_000, maxQueued: 10, wallClockMs: 3_600_000 },
        },
      ],
    },
    { catalog: discoverRunners([]), mountRoots: [] },
    { by: 'bench' },
  );
  let n = 0;
  const all: Promise<DispatchTicket>[] = [];
  const dispatch = (): Held => {
    const id = n++;
    let first!: (at: number) => void;
    const firstUpdate = new Promise<number>((r) => (first = r));
    const dispatchedAt = performance.now();
    const ticket = dispatcher.dispatch(
      {
        id: `e${id}`,
        platform: 'bench',
        bot: 'many',
        conversation: { type: 'private', id: `c${id}` },
        sender: { id: 'u' },
        // Ten words, a minute before each: held for ten minutes, however loaded the machine.
        message: { parts: [{ type: 'text', text: 'held '.repeat(10).trim() }] },
        receivedAt: new Date().toISOString(),
      },
      { onUpdate: () => first(performance.now()) },
    );
    // A run that ends before its first update fails the bench with its reason (rather than waiting for ever).
    const endedFirst = ticket.then((t) =>
      t.status === 'duplicate'
        ? Promise.reject(new Error('duplicate'))
        : t.done.then((o) => Promise.reject(new Error(`run ${t.runId} ended ${o.status}: ${o.reason}`))),
    );
    const raced = Promise.race([firstUpdate, endedFirst]);
    raced.catch(() => undefined); // cancelled by the bench before its first update: not a failure of its own
    all.push(ticket);
    return { ticket, dispatchedAt, firstUpdate: raced };
  };
  const endAll = async (held: Held[]) => {
    const tickets = await Promise.all(held.map((h) => h.ticket));
    for (const t of tickets) if (t.status !== 'duplicate') dispatcher.cancel(t.runId, 'bench over');
    const outcomes = await Promise.all(tickets.map((t) => (t.status === 'duplicate' ? undefined : t.done)));
    const bad = outcomes.filter((o): o is RunOutcome => o !== undefined && o.status !== 'cancelled');
    if (bad.length) throw new Error(`${bad.length} runs ended ${bad[0]!.status}: ${bad[0]!.reason}`);
  };
  const close = async () => {
    // After a failure part-way, runs may still be active: end them before the store closes under their timers.
    const tickets = await Promise.allSettled(all);
    for (const t of tickets)
      if (t.status === 'fulfilled' && t.value.status !== 'duplicate') dispatcher.cancel(t.value.runId, 'bench over');
    await dispatcher.drain();
    store.close();
    // The kernel may still be letting go of the last session folder's filesystem (EBUSY): try again shortly.
    for (let attempt = 0; ; attempt++) {
      try {
        rmSync(dataDir, { recursive: true, force: true });
        return;
      } catch (error) {
        if (attempt >= 10) throw error;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  };
  return { dispatch, endAll, close };
}

/** How long the active runs' own cost is measured before the dispatches. */
const IDLE_WINDOW_MS = 1000;

/**
 * The event-loop time one dispatch costs with the runs already active: `rounds` dispatches one after another, each
 * from the call to its run's first update. `busy`: the main thread's busy wall time in that window (what the event
 * loop could not do meanwhile: waits for a child included), `cpu`: its own CPU time; both less what the active runs
 * cost by themselves over the same time (measured over an idle second just before).
 */
async function dispatchCost(host: ReturnType<typeof openHost>, rounds: number) {
  // A measurement window, not a wait for anything: what the active runs cost the host by themselves, per ms.
  const [b0, c0, t0] = [busyMs(), cpuMs(), performance.now()];
  await new Promise((r) => setTimeout(r, IDLE_WINDOW_MS));
  const idle = { busy: (busyMs() - b0) / (performance.now() - t0), cpu: (cpuMs() - c0) / (performance.now() - t0) };
  const busy: number[] = [];
  const cpu: number[] = [];
  const longest: number[] = [];
  const held: Held[] = [];
  for (let i = 0; i < rounds; i++) {
    const h = monitorEventLoopDelay({ resolution: 1 });
    h.enable();
    const [b, c] = [busyMs(), cpuMs()];
    const one = host.dispatch();
    held.push(one);
    const at = await one.firstUpdate;
    const window = at - one.dispatchedAt;
    h.disable();
    busy.push(busyMs() - b - idle.busy * window);
    cpu.push(cpuMs() - c - idle.cpu * window);
    longest.push(h.max / 1e6);
  }
  await host.endAll(held);
  return {
    busy: { ...summarize(busy), max: Math.max(...busy) },
    cpu: { ...summarize(cpu), max: Math.max(...cpu) },
    longestBlock: summarize(longest),
    idleBusyPerSec: idle.busy * 1000,
    fork: await forkCost(),
    hostRssMiB: process.memoryUsage().rss / 2 ** 20,
  };
}

/** `count` dispatches at once: event-loop delay, first-update latency, runs started per second, memory. */
async function burst(host: ReturnType<typeof openHost>, count: number) {
  const rssBefore = process.memoryUsage().rss / 2 ** 20;
  const helpers: HelperTiming[] = [];
  configureHelperSpawner({ observe: (t) => helpers.push(t) });
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const t0 = performance.now();
  const held = Array.from({ length: count }, () => host.dispatch());
  const firsts = await Promise.all(held.map((h) => h.firstUpdate));
  const elapsed = performance.now() - t0;
  delay.disable();
  configureHelperSpawner({ observe: () => undefined });
  const mounts = helpers.filter((t) => t.file.endsWith('/mount'));
  const hostRss = process.memoryUsage().rss / 2 ** 20;
  const pids = descendants();
  const runners = memoryOf(pids);
  return {
    held,
    figures: {
      count,
      firstUpdate: summarize(firsts.map((at, i) => at - held[i]!.dispatchedAt)),
      runsPerSec: count / (elapsed / 1000),
      loopDelayP99: delay.percentile(99) / 1e6,
      loopDelayMax: delay.max / 1e6,
      hostRssMiB: hostRss,
      hostRssGrowthMiB: hostRss - rssBefore,
      processes: pids.length,
      runnerRssMiBPerRun: runners.rssMiB / count,
      runnerPssMiBPerRun: runners.pssMiB / count,
      helpers: helpers.length,
      helperWaited: spread(helpers.map((t) => t.waitedMs)),
      mountAnswered: spread(mounts.map((t) => t.answeredMs)),
      mountRan: spread(mounts.map((t) => t.ranMs ?? 0)),
    },
  };
}

/** Median, p99 and max of a sample (zeros when empty: a machine without quota mounts runs no helper). */
function spread(values: number[]) {
  return values.length ? { ...summarize(values), max: Math.max(...values) } : { median: 0, p99: 0, max: 0 };
}

/** The counts and backends asked for (`PADDOCK_BENCH_MANY=50,100,200,400`, `PADDOCK_BENCH_MANY_BACKENDS=process`). */
function plan(): { counts: number[]; backends: Backend[]; costAt: number; rounds: number } {
  const counts = (process.env.PADDOCK_BENCH_MANY ?? '50,100,200,400').split(',').map(Number);
  const backends = (process.env.PADDOCK_BENCH_MANY_BACKENDS ?? 'process,bwrap').split(',') as Backend[];
  const costAt = Number(process.env.PADDOCK_BENCH_MANY_COST_AT ?? 200);
  return { counts, backends, costAt, rounds: Number(process.env.PADDOCK_BENCH_MANY_ROUNDS ?? 10) };
}

/** Memory a burst may need: its runners at 32 MiB each (27 MiB PSS measured), and 3 GiB left for the rest. */
const fits = (count: number) => availableMiB() > count * 32 + 3072;

/** One dispatch's cost, as a table row. */
function costRow(label: string, c: Awaited<ReturnType<typeof dispatchCost>>): string {
  return (
    `| ${label} | ${fmt(c.busy.median, 1)} / ${fmt(c.busy.p99, 1)} / ${fmt(c.busy.max, 1)} ms | ` +
    `${fmt(c.cpu.median, 1)} / ${fmt(c.cpu.p99, 1)} / ${fmt(c.cpu.max, 1)} ms | ` +
    `${fmt(c.longestBlock.median, 1)} ms | ${fmt(c.idleBusyPerSec, 0)} ms/s | ` +
    `${fmt(c.fork, 1)} ms at ${fmt(c.hostRssMiB, 0)} MiB |`
  );
}

/** One burst, as a table row. */
function burstRow(f: Awaited<ReturnType<typeof burst>>['figures']): string {
  return (
    `| ${f.count} | ${fmt(f.firstUpdate.median, 0)} / ${fmt(f.firstUpdate.p99, 0)} ms | ${fmt(f.runsPerSec, 1)} | ` +
    `${fmt(f.loopDelayP99, 1)} / ${fmt(f.loopDelayMax, 1)} ms | ${fmt(f.hostRssMiB, 0)} MiB ` +
    `(+${fmt(f.hostRssGrowthMiB, 0)}) | ${fmt(f.runnerRssMiBPerRun, 1)} / ${fmt(f.runnerPssMiBPerRun, 1)} MiB | ` +
    `${f.processes} | ${f.helpers}: ${fmt(f.helperWaited.median, 0)} / ${fmt(f.helperWaited.max, 0)} ms | ` +
    `${fmt(f.mountRan.median, 0)} / ${fmt(f.mountRan.p99, 0)} / ${fmt(f.mountRan.max, 0)} ms ` +
    `(answered ${fmt(f.mountAnswered.median, 0)} / ${fmt(f.mountAnswered.max, 0)}) |`
  );
}

/**
 * Many runs on one host (issue 16, part 5): the event-loop cost of one dispatch with 0 runs active (the baseline) and
 * with `costAt` active, then bursts of 50/100/200/400 dispatches at once, each held active until all have started.
 */
export async function manyRunsBench() {
  const { counts, backends, costAt, rounds } = plan();
  const results: Record<string, unknown> = {};
  console.log(`\n## Many runs on one host (echo runner held active; ${backends.join(', ')})`);
  console.log("method: one dispatch = from dispatch() to the run's first update, less what the active runs cost");
  console.log('        alone; busy = event-loop busy wall time, cpu = main-thread CPU; fork = spawn() of /bin/true');
  console.log('        from this process. Bursts dispatch N at once, each run held (echo, 60 s a word) until all');
  console.log("        N have sent their first update, then cancelled. One warm-up run first. helpers: the burst's");
  console.log('        helper programs (mkfs, mount…): time waiting for a helper-spawner slot; mount ran: its time');
  console.log('        in the spawner (answered: from its sending to the host reading the answer).');
  for (const backend of backends) {
    const host = openHost(backend);
    try {
      const warm = host.dispatch();
      await warm.firstUpdate;
      await host.endAll([warm]);
      const idle = await dispatchCost(host, rounds);
      const background = fits(costAt) ? await burst(host, costAt) : undefined;
      const loaded = background ? await dispatchCost(host, rounds) : undefined;
      if (background) await host.endAll(background.held);
      console.log(`\n### ${backend}: one dispatch, ${rounds} rounds each`);
      console.log(
        '| active runs | busy p50 / p99 / max | cpu p50 / p99 / max | longest block (median) | active runs alone | ' +
          'fork from the host |',
      );
      console.log('| --- | --- | --- | --- | --- | --- |');
      console.log(costRow('0', idle));
      if (loaded) console.log(costRow(String(costAt), loaded));
      else console.log(`| ${costAt} | skipped: not enough free memory |`);
      if (loaded)
        console.log(`ratio ${costAt} / 0 active (median busy): ${fmt(loaded.busy.median / idle.busy.median, 2)}×`);
      const bursts = [];
      console.log(
        `\n| ${backend} N | first update p50 / p99 | runs/s | loop delay p99 / max | host RSS (growth) | ` +
          'runner RSS / PSS per run | processes | helpers: waited p50 / max | mount ran p50 / p99 / max (answered) |',
      );
      console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
      for (const count of counts) {
        if (!fits(count)) {
          console.log(`| ${count} | skipped: ${fmt(availableMiB(), 0)} MiB available |`);
          continue;
        }
        try {
          const b = await burst(host, count);
          await host.endAll(b.held);
          bursts.push(b.figures);
          console.log(burstRow(b.figures));
        } catch (error) {
          // Said, not hidden behind the clean-up's own failure; the host's close ends the burst's runs.
          console.log(`| ${count} | failed: ${(error as Error).message} |`);
          break;
        }
      }
      results[backend] = { idle, loaded, bursts };
    } finally {
      await host.close();
    }
  }
  return results;
}
