import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { execa } from 'execa';
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import { textEvent } from '../../sdk/protocol/runParams.js';
import { processStartTime } from '../../host/util/procIdentity.js';
import { joinCgroupsPrefix, readCgroupLayout, RunCgroup, sweepRunCgroups } from '../../host/sandbox/cgroups.js';
import { reconcile } from '../../host/recovery/reconcile.js';
import { tempStore } from '../helpers/store.js';
import { paddock } from '../helpers/cli.js';
import { repoPath } from '../helpers/fixtures.js';
import { liveSpawners } from '../helpers/procs.js';
import { tempHost } from '../helpers/host.js';

// Issue 11, item 18: a run's cgroup is emptied and removed at run end, after a host crash by
// recovery, and leftovers of runs this store knows ended are swept — never another host's.
// Needs root (writable cgroups); fails loudly otherwise.

const layout = readCgroupLayout();
const hierarchies = [...(layout.v2 ? [layout.v2] : []), ...layout.v1.values()];
/** Every cgroup directory of `runId` that exists, in any hierarchy. */
const cgroupDirsOf = (runId: string) => hierarchies.map((h) => join(h, 'paddock', runId)).filter((d) => existsSync(d));
const alive = (pid: number, start: number | null) => start !== null && processStartTime(pid) === start;

const host = tempHost({ limits: { wallClockMs: 30_000 } });
afterAll(() => host.close());

describe('run cgroups', () => {
  it('this machine has writable cgroups (run as root)', () => {
    const probe = RunCgroup.create(`probe-test-${process.pid}`, { pids: 64 });
    expect(probe, 'no writable cgroup hierarchy').toBeDefined();
    return probe!.release().then((left) => expect(left).toEqual([]));
  });

  it(
    'no run cgroup directory is left after a suite of runs of every shape (completed, crashed, setsid escapee, ' +
      'closed stdout, bwrap)',
    async () => {
      const runIds: string[] = [];
      const shapes: {
        runner: string;
        text?: string;
        sandbox?: 'process' | 'bwrap';
        config?: Record<string, unknown>;
      }[] = [
        { runner: 'echo' },
        { runner: 'echo', sandbox: 'bwrap' },
        { runner: repoPath('test/fixtures/runnerDirs/crashes') },
        { runner: 'tries-sandbox-escapes', config: { actions: ['setsid:600', 'forks:5'] } },
        { runner: 'tries-sandbox-escapes', config: { actions: ['setsid:600'] }, sandbox: 'bwrap' },
        { runner: repoPath('test/fixtures/runnerDirs/closes-stdout') },
      ];
      for (const shape of shapes) {
        const outcome = await host.runs.runAdHoc({
          runner: shape.runner,
          event: textEvent(shape.text ?? 'x'),
          config: shape.config,
          sandbox: shape.sandbox ?? 'process',
          onStart: (info) => runIds.push(info.runId),
        });
        expect(outcome.survivors, `${shape.runner}: ${outcome.reason}`).toEqual([]);
      }
      expect(runIds).toHaveLength(shapes.length);
      for (const runId of runIds) expect(cgroupDirsOf(runId), runId).toEqual([]);
    },
    180_000,
  );

  it(
    'after a host crash, recovery empties the run cgroup: a setsid grandchild the group kill misses dies, and ' +
      'the directory goes',
    async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'paddock-cgcrash-'));
      const child = paddock(
        [
          'run',
          '--runner',
          repoPath('test/fixtures/runnerDirs/setsid-then-hang'),
          '--text',
          'x',
          '--json',
          '--timeout',
          '120000',
        ],
        { dataDir },
      );
      onTestFinished(async () => {
        child.kill('SIGKILL');
        await child;
        await paddock(['runs', 'list'], { dataDir }); // recovers first: the run's quota mounts are detached
        rmSync(dataDir, { recursive: true, force: true });
      });
      // Read the stream until the runner says which pid escaped (event-driven, no timing).
      const escaped = await new Promise<{ runId: string; pid: number }>((resolve, reject) => {
        let buffered = '';
        let runId = '';
        child.stdout!.on('data', (chunk: Buffer) => {
          buffered += chunk.toString();
          for (;;) {
            const nl = buffered.indexOf('\n');
            if (nl === -1) break;
            const line = JSON.parse(buffered.slice(0, nl)) as {
              type: string;
              runId?: string;
              update?: { kind: string; data?: { pid: number } };
            };
            buffered = buffered.slice(nl + 1);
            if (line.type === 'started') runId = line.runId!;
            if (line.type === 'update' && line.update?.kind === 'log') resolve({ runId, pid: line.update.data!.pid });
          }
        });
        void child.then((r) => reject(new Error(`the host ended before the escape: ${r.stderr}`)));
      });
      const grandchild = { pid: escaped.pid, start: processStartTime(escaped.pid) };
      expect(alive(grandchild.pid, grandchild.start)).toBe(true);
      const db = new Database(join(dataDir, 'paddock.db'), { readonly: true });
      const run = db.prepare('SELECT pid, pid_start FROM runs WHERE id = ?').get(escaped.runId) as {
        pid: number;
        pid_start: number;
      };
      db.close();
      // The grandchild left the runner's group and session: only the cgroup still holds it.
      const stat = readFileSync(`/proc/${grandchild.pid}/stat`, 'utf8');
      expect(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[3])).not.toBe(run.pid);
      expect(cgroupDirsOf(escaped.runId).length).toBeGreaterThan(0);
      // The host dies, and its runner spawner with it (a group kill, the OOM killer): nothing kills the run on the way
      // out (decisions SP3), so its runner and the grandchild live on until recovery. Stopped first, so that the
      // spawner cannot act on the end of its channel between the two kills.
      const [spawner] = liveSpawners(child.pid);
      process.kill(Number(spawner), 'SIGSTOP');
      child.kill('SIGKILL');
      process.kill(Number(spawner), 'SIGKILL');
      await child;
      expect(alive(run.pid, run.pid_start)).toBe(true);
      expect(alive(grandchild.pid, grandchild.start)).toBe(true);

      const next = await paddock(['runs', 'list', '--json'], { dataDir }); // any command recovers first
      expect(next.exitCode, next.stderr).toBe(0);
      try {
        expect(alive(run.pid, run.pid_start)).toBe(false);
        expect(alive(grandchild.pid, grandchild.start)).toBe(false);
        expect(cgroupDirsOf(escaped.runId)).toEqual([]);
        const after = new Database(join(dataDir, 'paddock.db'), { readonly: true });
        expect(after.prepare('SELECT status, reason FROM runs WHERE id = ?').get(escaped.runId)).toMatchObject({
          status: 'interrupted',
          reason: expect.stringContaining('left in its cgroup'),
        });
        after.close();
      } finally {
        for (const p of [run, { pid: grandchild.pid, pid_start: grandchild.start }])
          if (alive(p.pid, p.pid_start)) process.kill(p.pid, 'SIGKILL');
      }
    },
    180_000,
  );

  it(
    'a root process-backend runner moves a child out of the run cgroup, group and session: it is still found ' +
      '(by its run id), killed and named; the report says the limit',
    async () => {
      let isolation: string[] = [];
      const outcome = await host.runs.runAdHoc({
        runner: repoPath('test/fixtures/runnerDirs/cgroup-escapee'),
        event: textEvent('x'),
        sandbox: 'process',
        onStart: (info) => (isolation = info.isolation.notEnforced),
      });
      const update = host.store
        .readEvents(host.store.run(outcome.runId)!.sessionId)
        .find((e) => e.runId === outcome.runId && e.type === 'run.update');
      const pid = (update!.data as { update: { data: { pid: number } } }).update.data.pid;
      try {
        expect(outcome.status, outcome.reason).toBe('completed');
        expect(processStartTime(pid)).toBeNull(); // the escapee is dead
        expect(outcome.survivors).toEqual([]);
        expect(outcome.reason).toContain(
          `had left its process group, session and cgroup (found by PADDOCK_RUN_ID in their environment: pids ${pid})`,
        );
        expect(isolation.join('\n')).toMatch(
          /move itself out of the run's cgroup .* only while its environment still holds the run's PADDOCK_RUN_ID/,
        );
        expect(cgroupDirsOf(outcome.runId)).toEqual([]);
      } finally {
        if (processStartTime(pid) !== null) process.kill(pid, 'SIGKILL');
      }
    },
    60_000,
  );

  it(
    'the sweep removes only empty cgroups of runs this store knows ended: never a live or unknown run, never a ' +
      'populated one',
    async () => {
      const known = `run_${'0'.repeat(8)}-0000-4000-8000-${String(process.pid).padStart(12, '0')}`;
      const live = known.replace(/.$/, 'a');
      const foreign = known.replace(/.$/, 'b');
      const busy = known.replace(/.$/, 'c');
      const made = [known, live, foreign, busy].map((id) => RunCgroup.create(id, { pids: 16 })!);
      const sleeper = execa('/bin/sh', ['-c', `echo $$ > ${made[3]!.procsFiles[0]} && exec sleep 600`], {
        reject: false,
      });
      try {
        await new Promise<void>((resolve) => {
          const check = () => (made[3]!.members().length > 0 ? resolve() : setTimeout(check, 10));
          check();
        });
        const ended = new Set([known, busy]);
        const sweep = sweepRunCgroups((id) => ended.has(id));
        expect(cgroupDirsOf(known)).toEqual([]);
        expect(sweep.removed.some((d) => d.endsWith(known))).toBe(true);
        expect(cgroupDirsOf(live).length).toBeGreaterThan(0); // about to be joined, for all the sweep knows
        expect(cgroupDirsOf(foreign).length).toBeGreaterThan(0); // another data folder's run
        expect(cgroupDirsOf(busy).length).toBeGreaterThan(0); // populated: the kernel refuses
      } finally {
        sleeper.kill('SIGKILL');
        await sleeper;
        for (const c of made) {
          await c.killAll(2_000);
          await c.release();
        }
      }
      for (const id of [known, live, foreign, busy]) expect(cgroupDirsOf(id)).toEqual([]);
    },
    60_000,
  );

  it("a dead host's warm slot cgroups are emptied and removed at the next start; a live host's are left", async () => {
    // A slot id names its owning host process (docs/warm-pool.md): one whose owner has exited, and this process's.
    const gone = execa('sleep', ['600'], { reject: false });
    const deadOwner = `${gone.pid}-${processStartTime(gone.pid!)}`;
    gone.kill('SIGKILL');
    await gone;
    const ids = [deadOwner, `${process.pid}-${processStartTime(process.pid)}`].map((o) => `run_w${o}-${randomUUID()}`);
    const made = ids.map((id) => RunCgroup.create(id, { pids: 16 })!);
    const sleepers = made.map((c) =>
      execa('/bin/sh', ['-c', `echo $$ > ${c.procsFiles[0]} && exec sleep 600`], { reject: false }),
    );
    try {
      await expect.poll(() => made.map((c) => c.members().length)).toEqual([1, 1]);
      const dataDir = mkdtempSync(join(tmpdir(), 'paddock-deadslot-'));
      const next = await paddock(['runs', 'list'], { dataDir }); // any command opens the state first
      expect(next.exitCode, next.stderr).toBe(0);
      expect(cgroupDirsOf(ids[0]!)).toEqual([]);
      expect((await sleepers[0]!).signal).toBe('SIGKILL');
      expect(made[1]!.members()).toHaveLength(1);
      expect(cgroupDirsOf(ids[1]!).length).toBeGreaterThan(0);
      rmSync(dataDir, { recursive: true, force: true });
    } finally {
      for (const s of sleepers) s.kill('SIGKILL');
      await Promise.all(sleepers);
      for (const c of made) {
        await c.killAll(2_000);
        await c.release();
      }
    }
  }, 60_000);
  it("recovery empties and removes a dead host's run's stdio MCP server cgroup, its setsid child too", async () => {
    // The host starts a run's MCP servers itself, in `paddock/<runId>-mcp-<server>`: the runner spawner does not
    // know them, so when the host is SIGKILLed they live on (the spawner attack's finding A01); the next start's
    // recovery must find them by the run id.
    const { store } = tempStore();
    const runId = `run_${randomUUID()}`;
    const cgroup = RunCgroup.create(`${runId}-mcp-sleeper`, { pids: 64 });
    expect(cgroup, 'no writable cgroup hierarchy').toBeDefined();
    const join_ = joinCgroupsPrefix(cgroup!.procsFiles);
    // The launcher exits at once; the sleep (no stdio of ours, so nothing waits on it) stays in the cgroup.
    await execa(join_[0]!, [...join_.slice(1), 'setsid', '-f', 'sleep', '1000'], { stdio: 'ignore' });
    const [pid] = cgroup!.members();
    expect(pid, 'the setsid child joined the cgroup').toBeDefined();
    const start = processStartTime(pid!);
    const { sessionId } = store.ensureSession('default', 'b', `k-${runId}`);
    store.append(sessionId, [{ type: 'run.queued', runId, data: { runner: 'echo', goalRevision: 0, attempt: 1 } }]);
    const report = await reconcile(store);
    expect(report.interruptedRuns.map((r) => r.runId)).toEqual([runId]);
    expect(alive(pid!, start)).toBe(false);
    expect(cgroupDirsOf(`${runId}-mcp-sleeper`)).toEqual([]);
    expect(store.session(sessionId).pendingRecovery[0]?.reason).toMatch(/1 other process\(es\) left in its cgroup/);
    store.close();
  });

  it(
    'recovery inside a pid namespace: a cgroup member it cannot see (pid 0 there) is a survivor it names, never ' +
      'kill(0) of its own process group',
    async () => {
      // A host started in its own pid namespace recovers a run whose cgroup holds a process outside it: cgroup.procs
      // lists that member as 0 there, and kill(0, SIGKILL) is the caller's own process group (the attack's F5).
      const { store, dataDir } = tempStore();
      const runId = `run_${randomUUID()}`;
      const cgroup = RunCgroup.create(runId, { pids: 64 });
      expect(cgroup, 'no writable cgroup hierarchy').toBeDefined();
      const join_ = joinCgroupsPrefix(cgroup!.procsFiles);
      await execa(join_[0]!, [...join_.slice(1), 'setsid', '-f', 'sleep', '1000'], { stdio: 'ignore' });
      const [pid] = cgroup!.members();
      expect(pid, 'the outside process joined the cgroup').toBeDefined();
      const start = processStartTime(pid!);
      onTestFinished(async () => {
        if (alive(pid!, start)) process.kill(pid!, 'SIGKILL');
        await cgroup!.killAll(2_000);
        await cgroup!.release();
        rmSync(dataDir, { recursive: true, force: true });
      });
      const { sessionId } = store.ensureSession('default', 'b', `k-${runId}`);
      store.append(sessionId, [{ type: 'run.queued', runId, data: { runner: 'echo', goalRevision: 0, attempt: 1 } }]);
      store.close();

      // `paddock runs list` recovers first. Not pid 1 of the namespace (init ignores what it has no handler for): a
      // shell is, and says how the command ended. Detached: a kill(0) there reaches no process of this test.
      const inside = await execa(
        'unshare',
        [
          '--pid',
          '--fork',
          '--mount-proc',
          'sh',
          '-c',
          '"$0" "$1" runs list --json >/dev/null; echo "exit $?"',
          process.execPath,
          repoPath('bin/paddock.js'),
        ],
        { env: { PADDOCK_HOME: dataDir, NO_COLOR: '1' }, reject: false, detached: true },
      );
      expect(inside.stdout.trim(), inside.stderr).toBe('exit 0');
      expect(alive(pid!, start)).toBe(true); // not this namespace's to judge: left, and said
      const after = new Database(join(dataDir, 'paddock.db'), { readonly: true });
      expect(after.prepare('SELECT status, reason FROM runs WHERE id = ?').get(runId)).toMatchObject({
        status: 'interrupted',
        reason: expect.stringContaining(
          "1 process(es) of its cgroup could not be killed: outside this host's pid namespace (listed as pid 0)",
        ),
      });
      after.close();
      expect(cgroupDirsOf(runId).length).toBeGreaterThan(0);
    },
    60_000,
  );
});
