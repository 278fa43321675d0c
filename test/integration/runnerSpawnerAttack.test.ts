import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { execa, type ResultPromise } from 'execa';
import { afterAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import {
  configureRunnerSpawner,
  DEFAULT_SPAWN_ANSWER_MS,
  type SpawnRequest,
} from '../../host/process/runnerSpawner.js';
import { processesOfRun } from '../../host/process/runEnvScan.js';
import { signalEach } from '../../sdk/process/procTable.js';
import { textEvent } from '../../sdk/protocol/runParams.js';
import { readCgroupLayout } from '../../host/sandbox/cgroups.js';
import { USERNS_FD } from '../../host/sandbox/runIdentity.js';
import { deferred, settlesWithin } from '../../host/util/deferred.js';
import { jsonLines } from '../helpers/cli.js';
import { isAlive, repoPath } from '../helpers/fixtures.js';
import { liveSpawners } from '../helpers/procs.js';
import { chatEvent, tempHost } from '../helpers/host.js';

// An outside attack on the runner spawner (docs/runner-spawner.md): a runner package that kills the spawner, a host
// that inherited a descriptor, and the spawner killed under live runs of both backends. Real runs through the real
// host (root, cgroups, bwrap); the only instrument is a host event loop held busy after it asked for a runner.

/** Set by a test: a spawn request it matches is followed by a busy host loop until `until` holds (10 s at most). */
const busyAfterSpawn = vi.hoisted(() => ({
  when: undefined as ((request: SpawnRequest) => boolean) | undefined,
  until: (): boolean => true,
}));

// A busy host (many runs, a large runner message being parsed) takes the spawner's answers late: the loop is held
// right after the request went out, as such a host would be, while the runner acts.
vi.mock('../../host/process/runnerSpawner.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../host/process/runnerSpawner.js')>();
  return {
    ...real,
    spawnThroughSpawner: (request: SpawnRequest) => {
      const started = real.spawnThroughSpawner(request);
      const giveUpAt = performance.now() + 10_000;
      if (busyAfterSpawn.when?.(request))
        while (!busyAfterSpawn.until()) if (performance.now() > giveUpAt) throw new Error('the condition never held');
      return started;
    },
  };
});

/** The kills-its-spawner fixture's start (its command line, through the launch chain). */
const killsItsSpawner = (request: SpawnRequest) => request.args.some((a) => a.includes('kill -9 $PPID'));

/** Live processes whose environment mentions `text` (e.g. a host's data folder: a run's HOME is in it). */
function processesMentioning(text: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => {
      try {
        return isAlive(pid) && readFileSync(`/proc/${pid}/environ`, 'utf8').includes(text);
      } catch {
        return false;
      }
    });
}

const fixture = (name: string) => repoPath(`test/fixtures/runnerDirs/${name}`);
const conversation = (id: string) => ({ conversation: { type: 'private' as const, id } });

describe('the runner spawner under attack', () => {
  const host = tempHost({ maxConcurrentRuns: 8, limits: { wallClockMs: 60_000, handshakeTimeoutMs: 60_000 } });
  afterAll(async () => {
    await host.runs.warmPools.close();
    await host.close();
  });

  it('a runner that kills the spawner before its start reached the host is killed with its run', async () => {
    await host.runs.runAdHoc({ runner: 'echo', event: textEvent('up'), sandbox: 'process' }); // the spawner is up
    const spawners = liveSpawners();
    expect(spawners).toHaveLength(1);
    // The runner's first act kills the spawner while the host has not yet taken its stdio and pid.
    busyAfterSpawn.when = killsItsSpawner;
    busyAfterSpawn.until = () => liveSpawners().length === 0;
    onTestFinished(() => void (busyAfterSpawn.when = undefined));
    let runId = '';
    onTestFinished(() => signalEach(processesOfRun(runId), 'SIGKILL'));
    const outcome = await host.runs.runAdHoc({
      runner: fixture('kills-its-spawner'),
      event: textEvent('x', conversation('kills')),
      sandbox: 'process',
      onStart: (info) => (runId = info.runId),
    });
    expect([outcome.status, outcome.reason]).toEqual([
      'crashed',
      expect.stringContaining('the runner spawner exited before the runner started'),
    ]);
    // Fail closed (docs/runner-spawner.md): the runner the dead spawner had started does not go on unsupervised.
    expect(processesOfRun(runId)).toEqual([]);
    expect(outcome.survivors).toEqual([]);
    const next = await host.runs.runAdHoc({ runner: 'echo', event: textEvent('after'), sandbox: 'process' });
    expect(next.status, next.reason).toBe('completed');
  }, 60_000);

  it('so is a warm slot whose runner does so, and the cold run beside it', async () => {
    host.apply({
      bindings: [
        {
          id: 'warm-kills',
          runner: 'kills-its-spawner',
          sandbox: 'process',
          limits: { warmPool: 1 },
          route: { platform: 'telegram', bot: 'warm-kills' },
        },
      ],
    });
    busyAfterSpawn.when = killsItsSpawner;
    busyAfterSpawn.until = () => liveSpawners().length === 0;
    onTestFinished(() => void (busyAfterSpawn.when = undefined));
    onTestFinished(() => signalEach(processesMentioning(host.dataDir), 'SIGKILL'));
    // The run finds no slot: it starts cold and the pool starts one beside it; each runner kills the spawner.
    const ticket = await host.dispatcher.dispatch(chatEvent({ bot: 'warm-kills', conversation: { id: 'warm' } }));
    if (ticket.status === 'duplicate') throw new Error('unexpected duplicate');
    const outcome = await ticket.done;
    await host.runs.warmPools.filled();
    expect(outcome.status, outcome.reason).toBe('crashed');
    expect(processesMentioning(host.dataDir)).toEqual([]);
  }, 60_000);

  it(
    'the spawner killed under live runs of both backends (setsid escapees included): every run crashed, nothing ' +
      'of any run left, the next run starts',
    async () => {
      const runIds: string[] = [];
      let escaped = 0;
      const allEscaped = deferred();
      const runs = (['process', 'bwrap'] as const).map((sandbox) =>
        host.runs.runAdHoc({
          runner: fixture('setsid-then-hang'),
          event: textEvent('x', conversation(`live-${sandbox}`)),
          sandbox,
          onStart: (info) => runIds.push(info.runId),
          onUpdate: () => ++escaped === 2 && allEscaped.resolve(),
        }),
      );
      onTestFinished(() =>
        signalEach(
          runIds.flatMap((id) => processesOfRun(id)),
          'SIGKILL',
        ),
      );
      await allEscaped.promise;
      signalEach(liveSpawners().map(Number), 'SIGKILL');
      for (const outcome of await Promise.all(runs)) {
        expect([outcome.status, outcome.signal], outcome.reason).toEqual(['crashed', 'SIGKILL']);
        expect(outcome.survivors).toEqual([]);
      }
      for (const runId of runIds) expect(processesOfRun(runId), runId).toEqual([]);
      const next = await host.runs.runAdHoc({ runner: 'echo', event: textEvent('after'), sandbox: 'bwrap' });
      expect(next.status, next.reason).toBe('completed');
    },
    90_000,
  );
});

describe('what a runner inherits', () => {
  it.each(['process', 'bwrap'] as const)(
    '%s: its stdio, not a descriptor the host was started with (a supervisor pipe, a socket)',
    async (sandbox) => {
      const home = mkdtempSync(join(tmpdir(), 'paddock-fds-'));
      // The host starts with fd 200 open and inheritable, as from a supervisor or a job runner: node marks only its
      // fds 0-15 (and on to the first gap) close-on-exec. The fixture writes its descriptors' numbers to stderr.
      const run = ['run', '--runner', fixture('lists-its-descriptors'), '--text', 'x', '--sandbox', sandbox, '--json'];
      const cli = await execa(
        '/bin/bash',
        ['-c', 'exec 200</dev/null; exec "$@"', 'host', process.execPath, repoPath('bin/paddock.js'), ...run],
        { reject: false, cwd: repoPath('.'), env: { PADDOCK_HOME: home, NO_COLOR: '1' } },
      );
      const outcome = jsonLines(cli.stdout).find((l) => l.type === 'outcome')?.outcome as
        { status: string; stderrTail: string } | undefined;
      expect(outcome?.status, cli.stderr).toBe('crashed');
      const fds = outcome!.stderrTail.trim().split('\n');
      // Under bwrap on a root host, fd 9 is the run's user namespace bwrap joined (--userns 9): bwrap leaves it open
      // (docs/security-model.md, "Not enforced yet"); the sandbox is in that namespace already, with no capability.
      expect(fds.filter((fd) => !(sandbox === 'bwrap' && fd === String(USERNS_FD)))).toEqual(['0', '1', '2']);
      rmSync(home, { recursive: true, force: true });
    },
    60_000,
  );
});

/** The run id of the first `started` line of a `paddock run --json` child, once its runner has sent an update. */
function runIdOnceUpdated(child: ResultPromise): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffered = '';
    let runId = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      for (let nl = buffered.indexOf('\n'); nl !== -1; nl = buffered.indexOf('\n')) {
        const line = JSON.parse(buffered.slice(0, nl)) as { type: string; runId?: string };
        buffered = buffered.slice(nl + 1);
        if (line.type === 'started') runId = line.runId!;
        if (line.type === 'update') resolve(runId);
      }
    });
    void child.then((r) => reject(new Error(`the host ended before its runner's update: ${r.stderr}`)));
  });
}

// Decisions SP4: a spawner that owes a start and says nothing for the bound is killed as lost (fail closed).
describe('a stopped spawner is given up', () => {
  it(
    'a runner that stops the spawner: a later run of another binding starts within the bound plus a start, and ' +
      "the stopped spawner's runs end crashed with nothing left",
    async () => {
      const answerMs = 1_500;
      const host = tempHost({
        runnerSpawnerAnswerMs: answerMs,
        limits: { wallClockMs: 60_000, shutdownGraceMs: 200, termGraceMs: 200, killConfirmMs: 2_000 },
      });
      onTestFinished(() => host.close());
      onTestFinished(() => configureRunnerSpawner({ answerMs: DEFAULT_SPAWN_ANSWER_MS }));
      const runIds: string[] = [];
      onTestFinished(() =>
        signalEach(
          runIds.flatMap((id) => processesOfRun(id)),
          'SIGKILL',
        ),
      );
      // A run the spawner holds (bwrap, a setsid escapee inside): its runner's exit is seen through the spawner only.
      const escaped = deferred();
      const held = host.runs.runAdHoc({
        runner: fixture('setsid-then-hang'),
        event: textEvent('x', conversation('held')),
        sandbox: 'bwrap',
        onStart: (info) => runIds.push(info.runId),
        onUpdate: () => escaped.resolve(),
      });
      await escaped.promise;
      const spawner = Number(liveSpawners()[0]);
      onTestFinished(() => void (isAlive(spawner) && process.kill(spawner, 'SIGKILL')));
      // Its first act stops its parent, the spawner; then it exits, unseen.
      const stopper = await host.runs.runAdHoc({
        runner: fixture('stops-its-spawner'),
        event: textEvent('x', conversation('stopper')),
        sandbox: 'process',
        onStart: (info) => runIds.push(info.runId),
      });
      expect(stopper.status).not.toBe('completed');
      // A bwrap run of another runner and conversation. Its start is owed by the stopped spawner (or by a new one, if
      // the stopper's own start already found the spawner stopped past the bound).
      const next = host.runs.runAdHoc({
        runner: 'echo',
        event: textEvent('y', conversation('next')),
        sandbox: 'bwrap',
      });
      expect(await settlesWithin(next, answerMs + 20_000)).toBe(true);
      expect((await next).status).toBe('completed');
      const outcome = await held;
      expect([outcome.status, outcome.signal], outcome.reason).toEqual(['crashed', 'SIGKILL']);
      expect(outcome.survivors).toEqual([]);
      await expect.poll(() => isAlive(spawner)).toBe(false);
      for (const runId of runIds) expect(processesOfRun(runId), runId).toEqual([]);
    },
    90_000,
  );
});

/** The cgroup directories of `runId` that exist, in every hierarchy of this machine. */
function runCgroupDirs(runId: string): string[] {
  const layout = readCgroupLayout();
  return [...(layout.v2 ? [layout.v2] : []), ...layout.v1.values()]
    .map((h) => join(h, 'paddock', runId))
    .filter((d) => existsSync(d));
}

/** Pids in the cgroups of `runId` (a run's whole tree, setsid escapees and a sandbox included). */
function cgroupMembers(runId: string): number[] {
  const pids = runCgroupDirs(runId).flatMap((d) => readFileSync(join(d, 'cgroup.procs'), 'utf8').split('\n'));
  return [...new Set(pids.filter(Boolean).map(Number))];
}

// Decisions SP3 (the lead: fail closed): the runner spawner outlives a SIGKILLed host by as long as it takes to read
// the end of its channel, and kills what the host started before it leaves.
describe('a host that dies takes its runs with it', () => {
  it.each(['process', 'bwrap'] as const)(
    '%s: a host killed with SIGKILL: the runner spawner kills every process of the run (setsid escapee and sandbox ' +
      "included) before it leaves; the next start's recovery marks the run interrupted once",
    async (sandbox) => {
      const home = mkdtempSync(join(tmpdir(), 'paddock-hostcrash-'));
      const env = { PADDOCK_HOME: home, NO_COLOR: '1' };
      const bin = repoPath('bin/paddock.js');
      const recover = () => execa(process.execPath, [bin, 'runs', 'list'], { reject: false, cwd: repoPath('.'), env });
      // Whatever happens: a command that recovers (it detaches the run's quota mounts), then the folder goes.
      onTestFinished(async () => {
        await recover();
        rmSync(home, { recursive: true, force: true });
      });
      const child = execa(
        process.execPath,
        [bin, 'run', '--runner', fixture('setsid-then-hang'), '--text', 'x', '--sandbox', sandbox, '--json'],
        { reject: false, cwd: repoPath('.'), env },
      );
      const runId = await runIdOnceUpdated(child);
      onTestFinished(() => signalEach([...processesOfRun(runId), ...cgroupMembers(runId)], 'SIGKILL'));
      const [spawner] = liveSpawners(child.pid);
      // The runner itself (process) or the outer bwrap, whose sandbox --die-with-parent does not reach on a root host.
      const launched = readFileSync(`/proc/${spawner}/task/${spawner}/children`, 'utf8').trim();
      // The runner and its setsid grandchild (bwrap: the sandbox's init, the runner, the grandchild) are in the cgroup.
      expect(cgroupMembers(runId).length).toBeGreaterThanOrEqual(2);
      expect(processesOfRun(runId).length).toBeGreaterThanOrEqual(2);
      child.kill('SIGKILL');
      await child;
      // No host start needed: gone as soon as the spawner has read the end of its channel.
      const left = () => [
        ...new Set(
          [Number(spawner), Number(launched), ...processesOfRun(runId), ...cgroupMembers(runId)].filter(isAlive),
        ),
      ];
      await expect.poll(left, { timeout: 5_000 }).toEqual([]);
      // The backstop still does its part: two commands, each of which recovers first; the run is interrupted once,
      // with nothing left for recovery to kill, and its cgroup removed.
      for (let i = 0; i < 2; i++) {
        const next = await recover();
        expect(next.exitCode, next.stderr).toBe(0);
      }
      const db = new Database(join(home, 'paddock.db'), { readonly: true });
      onTestFinished(() => void db.close());
      expect(db.prepare('SELECT status, reason FROM runs WHERE id = ?').get(runId)).toEqual({
        status: 'interrupted',
        reason: 'the host stopped during the run',
      });
      const interrupted = db.prepare("SELECT count(*) AS n FROM events WHERE run_id = ? AND type = 'run.interrupted'");
      expect(interrupted.get(runId)).toEqual({ n: 1 });
      expect(runCgroupDirs(runId)).toEqual([]);
    },
    90_000,
  );

  it('a warm slot of a host killed with SIGKILL: the runner spawner kills it too', async () => {
    const home = mkdtempSync(join(tmpdir(), 'paddock-warmcrash-'));
    const recover = () =>
      execa(process.execPath, [repoPath('bin/paddock.js'), 'runs', 'list'], {
        reject: false,
        cwd: repoPath('.'),
        env: { PADDOCK_HOME: home, NO_COLOR: '1' },
      });
    const child = execa(process.execPath, ['--import', 'tsx', repoPath('test/fixtures/holdsAWarmSlot.ts'), home], {
      reject: false,
      cwd: repoPath('.'),
    });
    onTestFinished(async () => {
      child.kill('SIGKILL');
      await child;
      signalEach(processesMentioning(home), 'SIGKILL');
      await recover(); // detaches the slot's quota mount
      rmSync(home, { recursive: true, force: true });
    });
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && resolve());
      void child.then((r) => reject(new Error(`the host ended before its slot was ready: ${r.stderr}`)));
    });
    // The idle slot's process, its PADDOCK_RUN_ID the slot's id (its cgroup's name).
    const [slotPid] = processesMentioning(home);
    expect(slotPid).toBeDefined();
    const slotId = /(?:^|\0)PADDOCK_RUN_ID=([^\0]+)/.exec(readFileSync(`/proc/${slotPid}/environ`, 'utf8'))![1]!;
    expect(cgroupMembers(slotId)).toEqual([slotPid]);
    child.kill('SIGKILL');
    await child;
    const left = () => [...new Set([...processesMentioning(home), ...cgroupMembers(slotId)].filter(isAlive))];
    await expect.poll(left, { timeout: 5_000 }).toEqual([]);
    // The next start removes the dead host's slot cgroup (no run in the store names it).
    expect((await recover()).exitCode).toBe(0);
    expect(runCgroupDirs(slotId)).toEqual([]);
  }, 60_000);
});
