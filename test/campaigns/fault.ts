// The fault campaign (issue 16): SIGKILL a real host (`paddock run`, test/fixtures/crashingHost.ts) at random moments
// — at a random committed event (dispatch, streaming, host requests, run end), between an effect's intent and act,
// or after a random delay — and sometimes kill the restarted host again while it recovers. After each kill the
// committed state is checked (gap-free seq, effects once, every streamed update stored, the audit verifies); then a
// host restarts, recovers and runs the next run, which must complete, and everything is checked again: every run
// ended exactly once, none left running, no runner process or cgroup left. `paddock audit verify` (the real CLI)
// checks each data folder before it is discarded. `--count` is the number of kills.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleHostEntry } from '../helpers/hostBundle.js';
import { checkState } from './fault/checkState.js';
import { runHost, type HostExit, type HostSetup, type Kill } from './fault/hostProcess.js';
import { streamedUpdates } from './fault/invariants.js';
import { phaseOf, runArgs, SCENARIOS, type Scenario } from './fault/scenarios.js';
import type { Campaign, CampaignArgs } from './lib/campaign.js';
import { caseSeed, intBetween, pick, seededRandom } from './lib/random.js';
import type { Report } from './lib/report.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));

/**
 * A clean run's figures per scenario, measured at the start: events it commits in an existing session, the host's
 * life in ms, and when it printed its `started` line (store opened, recovered, run dispatched).
 */
type Measured = Map<string, { events: number; ms: number; startedMs: number }>;

async function prepare(report: Report): Promise<{ setup: HostSetup; measured: Measured }> {
  const cli = await bundleHostEntry('test/fixtures/crashingHost.ts');
  const scratch = mkdtempSync(join(tmpdir(), 'paddock-campaign-fault-'));
  try {
    const doctor = await runHost({ cli, machineReport: '' }, scratch, ['doctor'], undefined);
    const machineReport = JSON.stringify((JSON.parse(doctor.stdout) as { machine: unknown }).machine);
    const setup = { cli, machineReport };
    const measured: Measured = new Map();
    for (const sc of SCENARIOS) {
      await runHost(setup, scratch, runArgs(sc), undefined); // a first run makes the session
      const before = checkState(scratch, [], true).state.events.length;
      const clean = await runHost(setup, scratch, runArgs(sc), undefined);
      if (clean.code !== sc.okExit) throw new Error(`clean ${sc.name} run exited ${clean.code}: ${clean.stderr}`);
      const events = checkState(scratch, [], true).state.events.length - before;
      const startedMs = clean.startedMs ?? clean.ms / 2;
      measured.set(sc.name, { events, ms: clean.ms, startedMs });
      report.note(
        `clean ${sc.name}: ${events} events, ${Math.round(clean.ms)} ms, started at ${Math.round(startedMs)} ms`,
      );
    }
    return { setup, measured };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * Picks how a host is killed: at a committed event (45 %), an effect's gap (15 %) or after a delay (40 %) drawn
 * between a third of the way to its `started` line (Node's own start is not what is tested) and its clean end.
 */
function pickKill(rand: () => number, m: { events: number; ms: number; startedMs: number }) {
  const r = rand();
  if (r < 0.45) return { kill: { crashAt: `event:${intBetween(rand, 1, m.events)}` }, mode: 'at an event' };
  if (r < 0.6) return { kill: { crashAt: `effect:${intBetween(rand, 1, 2)}` }, mode: 'in an effect gap' };
  const from = m.startedMs / 3;
  return { kill: { afterMs: Math.round(from + rand() * (m.ms - from)) }, mode: 'after a delay' };
}

/** The worker's state: its data folder and how many cases it ran in it. */
interface Worker {
  dataDir: string;
  cases: number;
  findings: Set<string>;
}

/** One kill case in the worker's data folder; returns the number of hosts SIGKILLed. */
async function killCase(cs: number, w: Worker, setup: HostSetup, measured: Measured, report: Report): Promise<number> {
  const rand = seededRandom(cs);
  const sc: Scenario = pick(rand, SCENARIOS);
  const m = measured.get(sc.name)!;
  let kills = 0;
  // A host that is killed: count it, classify where it died, check the state it left.
  const killed = async (label: string, kill: Kill, mode: string): Promise<boolean> => {
    const before = checkState(w.dataDir, [], false).state.events.length;
    const host = await guarded(runHost(setup, w.dataDir, runArgs(sc), kill), report, cs, label);
    if (host.signal !== 'SIGKILL') {
      report.count('hosts that finished before their kill');
      return false;
    }
    kills++;
    const streamed = streamedUpdates(host.stdout);
    const { problems, state } = checkState(w.dataDir, streamed, false);
    const committed = state.events.slice(before);
    report.count(`kills ${mode}`);
    report.count(`kills in ${label}: ${phaseOf(committed.at(-1)?.type)}`);
    report.count('updates streamed to a killed host client', streamed.length);
    for (const p of problems) report.violation(cs, `${sc.name}, ${label} killed ${mode}: ${p} (${w.dataDir})`);
    return true;
  };
  const first = pickKill(rand, m);
  await killed('a run', first.kill, first.mode);
  // The restarted host dies too, in half the cases, while it recovers: at one of its first events, or after a delay
  // up to its `started` line (recovery runs between the store's opening and the dispatch).
  if (rand() < 0.5) {
    const from = m.startedMs / 3;
    const again: Kill =
      rand() < 0.5
        ? { crashAt: `event:${intBetween(rand, 1, 4)}` }
        : { afterMs: Math.round(from + rand() * (m.startedMs - from)) };
    await killed('the restart', again, 'crashAt' in again ? 'at an event' : 'after a delay');
  }
  // Restart, recover, and the next run must complete.
  const next = await guarded(runHost(setup, w.dataDir, runArgs(sc), undefined), report, cs, 'next run');
  if (next.code !== sc.okExit)
    report.violation(
      cs,
      `${sc.name}: the next run exited ${next.code ?? next.signal}, not ${sc.okExit}: ` + next.stderr,
    );
  const { problems, findings, state } = checkState(w.dataDir, streamedUpdates(next.stdout), true);
  for (const p of problems) report.violation(cs, `${sc.name}, after recovery and the next run: ${p} (${w.dataDir})`);
  // Counted once each: a leftover stays until its folder is retired.
  for (const f of findings.filter((f) => !w.findings.has(f))) {
    w.findings.add(f);
    report.count(`finding: ${f.replace(/ run_\S+$/, '')}`);
  }
  report.total('runs in the current data folders (last case)', state.runs.length);
  report.count('cases');
  return kills;
}

/** A host that does not end within 3 minutes is a hang: killed, reported. */
async function guarded(p: Promise<HostExit>, report: Report, cs: number, label: string): Promise<HostExit> {
  const host = await p;
  if (host.ms > 180_000) report.violation(cs, `${label}: the host took ${Math.round(host.ms / 1000)} s`);
  return host;
}

/** A fresh data folder with one clean run in it (the session the kills happen in). */
async function freshWorker(setup: HostSetup): Promise<Worker> {
  const dataDir = mkdtempSync(join(tmpdir(), 'paddock-campaign-fault-'));
  await runHost(setup, dataDir, runArgs(SCENARIOS[0]!), undefined);
  return { dataDir, cases: 0, findings: new Set() };
}

/** `paddock audit verify` (the built CLI) on the folder, then the folder goes. */
function retire(w: Worker, report: Report, seed: number): void {
  const verify = spawnSync(process.execPath, [
    join(REPO, 'bin/paddock.js'),
    'audit',
    'verify',
    '--data-dir',
    w.dataDir,
  ]);
  report.count('data folders checked by paddock audit verify');
  const mounted = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter((l) => l.includes(`${w.dataDir}/`));
  if (mounted.length > 0) report.violation(seed, `mounts left in ${w.dataDir}: ${mounted.join('; ')}`);
  else if (verify.status !== 0)
    report.violation(
      seed,
      `paddock audit verify failed on ${w.dataDir}: ${String(verify.stdout)}${String(verify.stderr)}`,
    );
  else rmSync(w.dataDir, { recursive: true, force: true });
}

async function run(args: CampaignArgs, report: Report): Promise<void> {
  const workers = Number(args.flags.workers ?? 2);
  const casesPerFolder = Number(args.flags['cases-per-folder'] ?? 50);
  const { setup, measured } = await prepare(report);
  const started = performance.now();
  let kills = 0;
  let next = 0;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      let w = await freshWorker(setup);
      while (kills < args.count && !args.stopped?.()) {
        const cs = caseSeed(args.seed, next++);
        const k = await killCase(cs, w, setup, measured, report); // not `kills += await`: that reads kills first
        kills += k;
        if (++w.cases >= casesPerFolder) {
          retire(w, report, cs);
          w = await freshWorker(setup);
        }
        if (next % 10 === 0) {
          const perMin = (kills / (performance.now() - started)) * 60_000;
          report.note(`${next} cases, ${kills} kills, ${perMin.toFixed(1)} kills/min`);
        }
      }
      retire(w, report, args.seed);
    }),
  );
  const minutes = (performance.now() - started) / 60_000;
  report.total('kills (SIGKILLed hosts)', kills);
  report.total('kills per minute', Number((kills / minutes).toFixed(1)));
}

/** The fault campaign. */
export const campaign: Campaign = {
  description: 'SIGKILLs of a real host at random moments; after each: recover, check, next run completes',
  smokeCount: 20,
  nightlyCount: 1000,
  run,
};
