// Crash-point injection with a real host process, on either store (test/integration/crashRecovery.test.ts on SQLite,
// test/integration/postgres/hostCrashPoints.test.ts on PostgreSQL): the CLI run through test/fixtures/crashingHost.ts,
// whose store hook (PADDOCK_TEST_CRASH_AT) makes the host SIGKILL itself right after the N-th committed event (event:N)
// or between the intent and the act of its N-th host-side effect (effect:N). For every boundary of a scripted session
// we check the committed state before a restart, then restart the host and check that it recovers and converges.
import { mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { beforeAll, describe, expect, it } from 'vitest';
import type { AuditVerdict } from '../../host/audit/verify.js';
import { processStartTime } from '../../host/util/procIdentity.js';
import type { EventRow } from '../campaigns/fault/invariants.js';
import { repoPath } from './fixtures.js';
import { bundleHostEntry } from './hostBundle.js';

/** An event as the checks read it from either store (the fault campaign's row). */
export type { EventRow } from '../campaigns/fault/invariants.js';

/** Everything committed for one data folder: its events, its runs, and its audit chain verified. */
export interface CommittedState {
  events: EventRow[];
  /** `claimed`: the run holds its claim (about to start, or started), 1 or 0. */
  runs: { id: string; status: string; pid: number | null; pid_start: number | null; claimed: number }[];
  audit: AuditVerdict;
}

/** The runs as {@link CommittedState} has them, on either store. */
export const RUNS =
  'SELECT r.id, r.status, r.pid, r.pid_start, CASE WHEN EXISTS (SELECT 1 FROM run_claims c WHERE c.run_id = r.id) ' +
  'THEN 1 ELSE 0 END AS claimed FROM runs r';

/** Where the crashed hosts keep their state, and how a point's state is made fresh or copied. */
export interface CrashStore {
  name: string;
  /**
   * Whether the hosts hold a lease (PostgreSQL): then a queued run the killed host never claimed did no work and is not
   * interrupted by the restart; its start's takeover hands it on to the restarted host, whose dispatcher plans it
   * again — which an ad-hoc binding of a killed CLI (`paddock run --runner`) cannot be: it ends failed, saying so.
   */
  leased: boolean;
  /** The environment every host process on `dataDir` gets besides PATH (the database it uses, its lease). */
  env(dataDir: string): Record<string, string>;
  read(dataDir: string): CommittedState;
  /** Before a point: `dataDir`'s state emptied, or made a copy of what {@link keep} kept under `template`. */
  reset(dataDir: string, template?: string): void;
  /** After a point's clean runs: what `dataDir` holds besides its folder, kept as `template` (the folder is copied). */
  keep(dataDir: string, template: string): void;
  close(): void;
}

/** A scripted session: the runner, its text, and the exit code of its clean run. */
export interface CrashScenario {
  name: string;
  runner: string;
  text: string;
  okExit: number;
}

const TEXT = 'alpha beta gamma';
const LONG = Array.from({ length: 30 }, (_, i) => `w${i}`).join(' ');

/** The scripted sessions, by name. */
export const SCENARIOS = {
  echo: { name: 'echo', runner: 'echo', text: TEXT, okExit: 0 },
  longEcho: { name: 'long echo', runner: 'echo', text: LONG, okExit: 0 },
  crashingRunner: { name: 'crashing runner', runner: 'test/fixtures/runnerDirs/crashes', text: TEXT, okExit: 4 },
  // runner state requests: run.request events and state writes between the boundaries
  stateRequests: {
    name: 'state requests',
    runner: 'test/fixtures/runnerDirs/increments-state-counter',
    text: TEXT,
    okExit: 0,
  },
  // confirmed pointers: the external.saved boundary right after run.ended
  pointers: {
    name: 'pointers',
    runner: 'test/fixtures/runnerDirs/echoes-resume-pointers',
    text: 'resume-me',
    okExit: 0,
  },
} satisfies Record<string, CrashScenario>;

interface KillPoint {
  name: string;
  scenario: CrashScenario;
  prior: number;
  crashAt: string;
  /** Kill the restarted host too, while it recovers, at this boundary. */
  recoveryCrashAt?: string;
}

/**
 * Two at a time on the 2-core machine: each worker takes the next item when its last one ends, so no core idles.
 * `work` gets the worker's number (0 … width - 1).
 */
async function inPool<T>(
  items: readonly T[],
  work: (item: T, worker: number) => Promise<void>,
  width = 2,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async (_, worker) => {
      while (next < items.length) await work(items[next++]!, worker);
    }),
  );
}

/** Invariants that must hold on any committed state, crashed or not. */
function checkLog(events: EventRow[]): void {
  const bySession = new Map<string, number[]>();
  for (const e of events) bySession.set(e.session_id, [...(bySession.get(e.session_id) ?? []), e.seq]);
  for (const seqs of bySession.values()) expect(seqs).toEqual(seqs.map((_, i) => i + 1)); // gap-free, no duplicate
  // No effect is ever performed twice: one intent per (run, kind).
  const intents = events
    .filter((e) => e.type === 'effect.intent')
    .map((e) => `${e.run_id}:${(JSON.parse(e.data) as { kind: string }).kind}`);
  expect(new Set(intents).size).toBe(intents.length);
}

/**
 * The suite: measure each scenario's boundaries with clean sessions, then kill a host at every one of them (a first
 * run and a later run in the same session, each effect's intent/act gap, and for runs killed mid-way a second kill of
 * the restarted host at each boundary of its recovery), and check what was committed and that a restart converges.
 */
export function hostCrashPointSuite(store: () => CrashStore, scenarios: readonly CrashScenario[]): void {
  // The host with its dependencies bundled in: a suite starts hundreds of host processes, and per-file ESM loading of
  // the dependencies was a fifth of each one's CPU (test/helpers/hostBundle.ts).
  let cli = '';
  // This machine's probe report (bwrap, cgroups, quota…), made once by the same host in the same environment
  // (`paddock doctor --json`) and handed to every host process after it (PADDOCK_TEST_MACHINE_REPORT, read by the
  // fixture): the report each would compute, without the probe's six helper processes at each start. The probe itself
  // is tested in machineProbe.test.ts.
  let machineReport = '';
  let crashStore: CrashStore;
  beforeAll(async () => {
    crashStore = store();
    cli = await bundleHostEntry('test/fixtures/crashingHost.ts');
    const dataDir = mkdtempSync(join(tmpdir(), 'paddock-crash-probe-'));
    const doctor = await host(dataDir, ['doctor']);
    expect(doctor.exitCode, doctor.stderr).toBe(0);
    machineReport = JSON.stringify((JSON.parse(doctor.stdout) as { machine: unknown }).machine);
    rmSync(dataDir, { recursive: true, force: true });
    return () => crashStore.close();
  });

  function host(dataDir: string, args: string[], crashAt?: string) {
    return execa(process.execPath, [cli, ...args, '--data-dir', dataDir, '--json'], {
      reject: false,
      cwd: repoPath('.'),
      env: {
        PATH: process.env.PATH!,
        ...crashStore.env(dataDir),
        ...(machineReport ? { PADDOCK_TEST_MACHINE_REPORT: machineReport } : {}),
        ...(crashAt ? { PADDOCK_TEST_CRASH_AT: crashAt } : {}),
      },
    });
  }

  const run = (dataDir: string, crashAt: string | undefined, scenario: CrashScenario) =>
    host(dataDir, ['run', '--runner', scenario.runner, '--text', scenario.text], crashAt);

  /** Events a clean run writes in a fresh session and in an existing one, by scenario (measured: follows the code). */
  const boundaries = new Map<string, { first: number; later: number }>();

  describe(`crash-point injection with a real host process (${scenarios.length} sessions)`, () => {
    it('measures the boundaries of clean sessions', async () => {
      // Scenarios are independent (own data folder): two at a time, each one's two runs in order.
      await inPool(scenarios, async (sc, worker) => {
        const dataDir = mkdtempSync(join(tmpdir(), 'paddock-crash-clean-'));
        crashStore.reset(dataDir);
        expect((await run(dataDir, undefined, sc)).exitCode).toBe(sc.okExit);
        const first = crashStore.read(dataDir).events.length;
        expect((await run(dataDir, undefined, sc)).exitCode).toBe(sc.okExit);
        boundaries.set(sc.name, { first, later: crashStore.read(dataDir).events.length - first });
        expect(first).toBeGreaterThanOrEqual(9);
        rmSync(dataDir, { recursive: true, force: true });
        void worker;
      });
      expect([...boundaries.keys()].sort()).toEqual(scenarios.map((sc) => sc.name).sort());
    }, 180_000); // ten host processes: ~10 s on an idle 2-core machine, over a minute when it is shared

    const points = (): KillPoint[] =>
      scenarios.flatMap((scenario) => {
        const b = boundaries.get(scenario.name)!;
        const events = (prior: number, n: number) =>
          Array.from({ length: n }, (_, i): KillPoint => ({
            name: `${scenario.name}, run ${prior + 1}, event ${i + 1}`,
            scenario,
            prior,
            crashAt: `event:${i + 1}`,
          }));
        const effects = (prior: number) =>
          [1, 2].map((n): KillPoint => ({
            name: `${scenario.name}, run ${prior + 1}, effect ${n} intent/act gap`,
            scenario,
            prior,
            crashAt: `effect:${n}`,
          }));
        const duringRecovery = Array.from({ length: 3 }, (_, i): KillPoint => ({
          name: `${scenario.name}, killed mid-run, then killed again at recovery event ${i + 1}`,
          scenario,
          prior: 1,
          crashAt: `event:${Math.ceil(b.later / 2)}`,
          recoveryCrashAt: `event:${i + 1}`,
        }));
        return [...events(0, b.first), ...events(1, b.later), ...effects(0), ...effects(1), ...duringRecovery];
      });

    it(
      'at every boundary: nothing committed is lost, no seq duplicated, no effect re-run, interruption reported, ' +
        'session converges',
      async () => {
        const all = points();
        expect(all.length).toBeGreaterThan(30 * scenarios.length);
        const failures: string[] = [];
        // Each pool worker runs its kill points one after another in ONE data folder path, emptied between points.
        // A point after earlier runs (prior > 0) starts from what those clean runs left at that path: run for real at
        // the worker's first such point of a scenario, kept as a byte copy (cp -a: modes, times, sparse images; and
        // the store's own copy, CrashStore.keep), and copied back at that same path for its later points. Same path
        // because the stored state names it (effect intents hold workspace paths, the runner bundle cache its
        // folder); the clean runs before a crash are not what a point tests (the crash and the restarts after them
        // are), and the state is the same bytes.
        const root = mkdtempSync(join(tmpdir(), 'paddock-crash-'));
        const templates = new Map<string, string>();
        const freshDataDir = async (p: KillPoint, worker: number): Promise<string> => {
          const dataDir = join(root, `worker-${worker}`);
          const key = `${worker}/${p.scenario.name}/${p.prior}`;
          const template = templates.get(key);
          if (template) {
            crashStore.reset(dataDir, template);
            await execa('cp', ['-a', '--sparse=always', template, dataDir]);
            return dataDir;
          }
          crashStore.reset(dataDir);
          mkdirSync(dataDir, { mode: 0o700 }); // as mkdtemp made it before
          if (p.prior === 0) return dataDir;
          for (let i = 0; i < p.prior; i++)
            expect((await run(dataDir, undefined, p.scenario)).exitCode).toBe(p.scenario.okExit);
          const copy = join(root, `template-${worker}-${scenarios.indexOf(p.scenario)}-${p.prior}`);
          crashStore.keep(dataDir, copy);
          await execa('cp', ['-a', '--sparse=always', dataDir, copy]);
          templates.set(key, copy);
          return dataDir;
        };
        const check = async (p: KillPoint, dataDir: string) => {
          const { okExit } = p.scenario;
          const before = p.prior > 0 ? crashStore.read(dataDir).events.length : 0;
          const crashed = await run(dataDir, p.crashAt, p.scenario);
          expect(crashed.signal, `${p.name}: the host should have killed itself`).toBe('SIGKILL');
          const afterCrash = crashStore.read(dataDir);
          // Nothing committed is lost: the crash came right after the commit holding the N-th event
          // (a transaction may hold several), and every update the host streamed to its client is stored.
          if (p.crashAt.startsWith('event:'))
            expect(afterCrash.events.length - before).toBeGreaterThanOrEqual(Number(p.crashAt.slice(6)));
          const streamed = crashed.stdout.split('\n').filter((l) => l.includes('"type":"update"')).length;
          const storedUpdates = (rows: EventRow[]) => rows.filter((e) => e.type === 'run.update').length;
          expect(storedUpdates(afterCrash.events)).toBeGreaterThanOrEqual(streamed);
          checkLog(afterCrash.events);
          expect(afterCrash.audit.ok, JSON.stringify(afterCrash.audit)).toBe(true);
          const orphan = afterCrash.runs.find(
            (r) => r.status === 'running' && r.pid !== null && processStartTime(r.pid) === r.pid_start,
          );
          const crashedRun = afterCrash.runs.find((r) => r.status === 'queued' || r.status === 'running');
          const handedOn = crashStore.leased && crashedRun?.status === 'queued' && crashedRun.claimed === 0;

          if (p.recoveryCrashAt) {
            // The restarted host dies too, while recovering: the next one must still converge.
            const again = await run(dataDir, p.recoveryCrashAt, p.scenario);
            expect(again.signal, `${p.name}: the recovering host should have killed itself`).toBe('SIGKILL');
            const mid = crashStore.read(dataDir);
            checkLog(mid.events);
            expect(mid.audit.ok, JSON.stringify(mid.audit)).toBe(true);
          }

          // Restart: the next run recovers first, then must finish in the same session.
          const resumed = await run(dataDir, undefined, p.scenario);
          expect(resumed.exitCode, `${p.name}: ${resumed.stderr}\n${resumed.stdout.slice(-500)}`).toBe(okExit);
          const after = crashStore.read(dataDir);
          checkLog(after.events);
          expect(after.audit.ok, JSON.stringify(after.audit)).toBe(true);
          expect(after.runs.filter((r) => r.status === 'queued' || r.status === 'running')).toEqual([]);
          if (orphan) expect(processStartTime(orphan.pid!)).toBeNull(); // the runner that outlived the host was killed
          if (crashedRun && handedOn) {
            const ends = after.events.filter(
              (e) => (e.type === 'run.ended' || e.type === 'run.interrupted') && e.run_id === crashedRun.id,
            );
            expect(ends.map((e) => [e.type, JSON.parse(e.data) as unknown])).toEqual([
              [
                'run.ended',
                expect.objectContaining({
                  status: 'failed',
                  reason: expect.stringMatching(/^its host died before it started, and it cannot be planned here: /),
                }),
              ],
            ]);
          } else if (crashedRun) {
            expect(after.runs.find((r) => r.id === crashedRun.id)?.status).toBe('interrupted');
            // A later run was told about the interruption, exactly once.
            const told = after.events.filter(
              (e) =>
                e.type === 'run.started' &&
                (JSON.parse(e.data) as { recoveryDelivered: string[] }).recoveryDelivered.includes(crashedRun.id),
            );
            expect(told).toHaveLength(1);
            // Recovery interrupted it once, however many hosts died on the way.
            expect(after.events.filter((e) => e.type === 'run.interrupted' && e.run_id === crashedRun.id)).toHaveLength(
              1,
            );
          }
          // Every effect intent has exactly one decision (result or reconciliation): none open, none decided twice.
          for (const intent of after.events.filter((e) => e.type === 'effect.intent')) {
            const id = (JSON.parse(intent.data) as { effectId: string }).effectId;
            const decisions = after.events.filter(
              (e) =>
                ['effect.result', 'effect.reconciled'].includes(e.type) &&
                (JSON.parse(e.data) as { effectId: string }).effectId === id,
            );
            expect(decisions, `${p.name}: decisions of ${id}`).toHaveLength(1);
          }
          // workspace effects are always decidable
          expect(after.events.some((e) => e.type === 'session.paused')).toBe(false);
        };
        // Two kill points at a time: each has its own data folder and host processes.
        let failed = 0;
        await inPool(all, async (p, worker) => {
          const dataDir = join(root, `worker-${worker}`);
          try {
            await check(p, await freshDataDir(p, worker));
            // Passed: its quota images (tens of MB each) go, or ~200 data folders fill the CI disk.
            rmSync(dataDir, { recursive: true, force: true });
          } catch (error) {
            // A failing one stays, moved aside for its post-mortem (the worker's path is needed for its next point).
            const kept = join(root, `failed-${++failed}`);
            try {
              renameSync(dataDir, kept);
            } catch {
              // Never made (the failure came first): nothing to keep.
            }
            failures.push(`${p.name}: ${(error as Error).message} (data folder: ${kept})`);
          }
        });
        if (failures.length === 0) rmSync(root, { recursive: true, force: true });
        expect(failures).toEqual([]);
      },
      900_000,
    );
  });
}
