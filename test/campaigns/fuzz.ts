// Protocol fuzz from the runner side (issue 16): seeded random and mutated runner → host messages; the host never
// crashes or hangs and ends every run with the outcome docs/protocol.md allows. `npm run campaign fuzz`.
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import type { Campaign } from './lib/campaign.js';
import { processesMentioning } from './lib/processesMentioning.js';
import { caseSeed } from './lib/random.js';
import type { Report } from './lib/report.js';
import { BoundaryLane } from './fuzz/boundary.js';
import { buildBridge } from './fuzz/bridge.js';
import { makeCase, type FuzzCase } from './fuzz/cases.js';
import { checkCase, describeCase, type CaseObservation, type RecordedRun } from './fuzz/check.js';
import { fuzzHost, HostLane, unfinishedRuns, type FuzzHost } from './fuzz/hostTier.js';
import { CASE_DEADLINE_MS } from './fuzz/limits.js';
import { RemotePlayer } from './fuzz/remotePlayer.js';

/** `--lanes N` fast-tier cases at once; `--host-every N` sends every Nth case through the whole host instead. */
export const campaign: Campaign = {
  description: 'protocol fuzz: seeded random/mutated runner messages; every run ends as the protocol says',
  smokeCount: 300,
  nightlyCount: 10_000,
  async run({ seed, count, flags, stopped = () => false }, report) {
    const lanes = Number(flags.lanes ?? 8);
    const hostEvery = Number(flags['host-every'] ?? 20);
    const root = mkdtempSync(join(tmpdir(), 'paddock-campaign-fuzz-'));
    // The runner side in its own processes: a player process, and per case a bridge process the host spawns.
    const bridge = buildBridge(root);
    const player = await RemotePlayer.start();
    const host = fuzzHost(root, Number(flags['host-lanes'] ?? 3), player, bridge);
    const fast = Array.from({ length: lanes }, (_, i) => new BoundaryLane(root, `lane-${i}`, player, bridge));
    const inFlight = new Set<number>();
    // The host code runs in this process: anything it throws past its own handlers would have crashed a host.
    const crashed = (error: unknown) =>
      report.violation([...inFlight][0] ?? seed, `host threw (would crash): ${(error as Error)?.stack ?? error}`);
    process.on('uncaughtException', crashed);
    process.on('unhandledRejection', crashed);
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    // The same, per 1,000 cases, next to the machine's load: tells a stall of the host from a busy machine.
    const window = monitorEventLoopDelay({ resolution: 10 });
    window.enable();
    try {
      const started = performance.now();
      const cpuBefore = process.cpuUsage();
      const indices = Array.from({ length: count }, (_, i) => i);
      const viaHost = indices.filter((i) => i % hostEvery === 0);
      const viaBoundary = indices.filter((i) => i % hostEvery !== 0);
      let done = 0;
      const play = async (tier: string, index: number, run: (fuzz: FuzzCase) => Promise<Played>) => {
        const fuzz = makeCase(caseSeed(seed, index));
        inFlight.add(fuzz.seed);
        const running = run(fuzz);
        const played = await withDeadline(running, CASE_DEADLINE_MS);
        record(report, tier, fuzz, played);
        const laneFree = played !== 'deadline' || (await lateEnd(report, fuzz.seed, running));
        inFlight.delete(fuzz.seed);
        if (++done % 1000 === 0) {
          report.note(
            `${done} cases, ${rate(done, started)} cases/s, load ${loadavg()[0]!.toFixed(1)}, ${delays(window)}`,
          );
          window.reset();
        }
        return laneFree;
      };
      await Promise.all([
        ...fast.map((lane) => drain(viaBoundary, stopped, (i) => play('boundary', i, (f) => lane.play(f)))),
        ...host.sockets.map((_, n) => {
          const lane = new HostLane(host, n);
          return drain(viaHost, stopped, (i) => play('host', i, (f) => lane.play(f)));
        }),
      ]);
      report.total('cases/s', rate(done, started));
      // This process's CPU (host code, campaign, bridges' spawns) against the wall clock: a loop delay far above what
      // the busy share explains is time spent waiting for a CPU, not the host's own synchronous work.
      const cpu = process.cpuUsage(cpuBefore);
      report.total('process CPU s', Math.round((cpu.user + cpu.system) / 1e4) / 100);
      report.total(
        'process CPU share of wall',
        Math.round(((cpu.user + cpu.system) / 1e3 / (performance.now() - started)) * 100) / 100,
      );
      await afterwards(report, seed, host, root);
    } finally {
      loop.disable();
      window.disable();
      report.total('event-loop delay p50 ms', Math.round(loop.percentile(50) / 1e6));
      report.total('event-loop delay p99 ms', Math.round(loop.percentile(99) / 1e6));
      report.total('event-loop delay max ms', Math.round(loop.max / 1e6));
      process.off('uncaughtException', crashed);
      process.off('unhandledRejection', crashed);
      await player.close();
      await host.gateway.close();
      host.store.close();
      rmSync(root, { recursive: true, force: true });
    }
  },
};

type Played = CaseObservation & { recorded?: RecordedRun };

/** Take indices from the shared list until it is empty, the campaign is stopped, or `each` retires the lane. */
async function drain(list: number[], stopped: () => boolean, each: (index: number) => Promise<boolean>) {
  for (let i = list.shift(); i !== undefined && !stopped(); i = list.shift()) if (!(await each(i))) return;
}

/**
 * After a hang was reported: the lane's socket and runner stay the case's until it ends, so the next case waits for
 * that (its outcome noted: a slow end, not a lost one) — or the lane retires if it does not end within another
 * deadline. Without this a late case's end closed the next case's socket (seeds 2975360477, 528047300).
 */
async function lateEnd(report: Report, seed: number, running: Promise<Played>): Promise<boolean> {
  const since = performance.now();
  const late = await withDeadline(running, CASE_DEADLINE_MS);
  if (late === 'deadline') report.note(`seed ${seed}: still no outcome after ${2 * CASE_DEADLINE_MS} ms; lane retired`);
  else report.note(`seed ${seed}: ended ${late.outcome.status} ${Math.round(performance.now() - since)} ms late`);
  return late !== 'deadline';
}

function record(report: Report, tier: string, fuzz: FuzzCase, played: Played | 'deadline'): void {
  report.count('cases');
  report.count(`cases via ${tier}`);
  if (played === 'deadline') {
    report.violation(fuzz.seed, `${tier}: hang: no outcome within ${CASE_DEADLINE_MS} ms [${describeCase(fuzz)}]`);
    return;
  }
  report.count(`ended ${played.outcome.status}`);
  report.count('messages sent', fuzz.early.length + fuzz.body.length + fuzz.endChunks.length);
  for (const problem of checkCase(fuzz, played, played.recorded))
    report.violation(fuzz.seed, `${tier}: ${problem} [${describeCase(fuzz)}]`);
}

/** After every case: nothing left running, no runner process left, and the host still serves a normal run. */
async function afterwards(report: Report, seed: number, host: FuzzHost, root: string): Promise<void> {
  for (const run of unfinishedRuns(host.store)) report.violation(seed, `run left unfinished: ${run}`);
  const left = processesMentioning(root);
  if (left.length) report.violation(seed, `runner processes left: ${left.join(', ')}`);
  const normal = await host.runs.runAdHoc({
    runner: 'echo',
    event: {
      id: `after-fuzz-${seed}`,
      platform: 'fuzz',
      bot: 'fuzz',
      conversation: { type: 'private', id: 'after' },
      sender: { id: 'u' },
      message: { parts: [{ type: 'text', text: 'still there?' }] },
      receivedAt: new Date().toISOString(),
    },
  });
  report.total('normal run afterwards', normal.status);
  if (normal.status !== 'completed') report.violation(seed, `a normal run afterwards ended ${normal.status}`);
}

function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T | 'deadline'> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'deadline'>((resolve) => (timer = setTimeout(() => resolve('deadline'), ms)));
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** Event-loop delay p50/p99/max of `h`, for a progress note. */
function delays(h: IntervalHistogram): string {
  const ms = (ns: number) => Math.round(ns / 1e6);
  return `event-loop delay p50 ${ms(h.percentile(50))} / p99 ${ms(h.percentile(99))} / max ${ms(h.max)} ms`;
}

function rate(done: number, since: number): number {
  return Math.round((done / ((performance.now() - since) / 1000)) * 10) / 10;
}
