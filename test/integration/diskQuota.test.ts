import { existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { IsolationReport } from '../../host/process/isolationReport.js';
import type { RunOutcome } from '../../host/process/outcome.js';
import { decideSandbox } from '../../host/sandbox/decide.js';
import { mountQuota, mountQuotaAsync, quotaImage } from '../../host/sandbox/diskQuota.js';
import { isolationReport } from '../../host/sandbox/prepare.js';
import { probeMachine } from '../../host/sandbox/probe.js';
import { mountRunDiskQuota } from '../../host/sandbox/runDiskQuota.js';
import { textEvent } from '../../sdk/protocol/runParams.js';
import { paddock } from '../helpers/cli.js';
import { tempHost } from '../helpers/host.js';

// Real loop devices, real ext4, real bwrap: these need root (scripts/setup.sh; the suite runs as
// root). They fail loudly, naming what is missing, rather than skipping.
const machine = probeMachine();
const MiB = 1024 * 1024;
const DISK = 64 * MiB;
const INODES = 2000;
// The file-size limit is far above the quota, so only the quota can stop the writes.
const host = tempHost({ limits: { diskBytes: DISK, inodes: INODES, fileSizeBytes: 1024 * MiB, wallClockMs: 120_000 } });
afterAll(() => host.close());

/** Every mount of this host's data folder, from the kernel's own table. */
const mountsOfData = () =>
  readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter((l) => l.includes(host.dataDir));
/** Loop devices whose backing file lies in this host's data folder. */
const loopsOfData = () =>
  readdirSync('/sys/block')
    .filter((d) => d.startsWith('loop') && existsSync(`/sys/block/${d}/loop/backing_file`))
    .filter((d) => {
      try {
        return readFileSync(`/sys/block/${d}/loop/backing_file`, 'utf8').includes(host.dataDir);
      } catch {
        return false; // detached meanwhile (another process's loop device on this shared machine)
      }
    });

let conversation = 0;
async function fill(actions: string[], sandbox: 'process' | 'bwrap', conv = `c${++conversation}`) {
  let isolation: IsolationReport | undefined;
  const outcome: RunOutcome = await host.runs.runAdHoc({
    runner: 'disk-filler',
    event: textEvent('fill', { conversation: { type: 'private', id: conv } }),
    config: { actions },
    sandbox,
    onStart: (info) => (isolation = info.isolation),
  });
  const text = (outcome.result?.output?.parts[0] as { text?: string } | undefined)?.text;
  const results = text ? (JSON.parse(text) as Record<string, string>) : {};
  // `<how far> <code>` per action.
  const report = (action: string) => {
    const [n, code] = (results[action] ?? 'missing missing').split(' ');
    return { n: Number(n), code };
  };
  return { outcome, report, isolation: isolation!, conv };
}

function expectNothingLeft() {
  expect(mountsOfData()).toEqual([]);
  expect(loopsOfData()).toEqual([]);
  // No workspace image is left; the session images are the only ones kept.
  const wsImages = join(host.dataDir, 'quota', 'workspaces');
  expect(existsSync(wsImages) ? readdirSync(wsImages) : []).toEqual([]);
}

describe('per-run disk and inode quota', () => {
  it('this machine can mount quota images (else: run as root with loop devices and e2fsprogs)', () => {
    expect(machine.diskQuota, machine.diskQuota.why).toMatchObject({
      available: true,
      mechanism: 'ext4 image on a loop device',
    });
  });

  for (const sandbox of ['process', 'bwrap'] as const) {
    describe(`${sandbox} backend`, () => {
      it(
        '600 MiB in one file: held at diskBytes with ENOSPC, the outcome names the limit, the report gives the ' +
          'filesystem figures',
        async () => {
          const { outcome, report, isolation } = await fill(['big:ws:600'], sandbox);
          expect(outcome.status, outcome.reason).toBe('completed');
          const big = report('big:ws:600');
          expect(big.code).toBe('ENOSPC');
          expect(big.n).toBeGreaterThan(DISK / 2);
          expect(big.n).toBeLessThanOrEqual(DISK);
          expect(outcome.reason).toMatch(
            new RegExp(
              String.raw`the disk limit \(diskBytes: workspace of \d+ bytes\) was reached in the workspac` +
                String.raw`e: writes past it failed with ENOSPC`,
            ),
          );
          // The structured twin of the note (run.ended's limits, what metrics count).
          expect(outcome.limits).toEqual(['diskBytes']);
          const line = isolation.enforced.find((g) => g.startsWith('disk: workspace ≤'));
          expect(line, JSON.stringify(isolation)).toMatch(
            new RegExp(
              String.raw`^disk: workspace ≤ (\d+) bytes and ≤ (\d+) files, session folder ≤ \d+ bytes and` +
                String.raw` ≤ \d+ files \(ext4 image on a loop device`,
            ),
          );
          const [, bytes, files] = /workspace ≤ (\d+) bytes and ≤ (\d+) files/.exec(line!)!;
          expect(Number(bytes)).toBeLessThanOrEqual(DISK);
          expect(Number(files)).toBeGreaterThan(INODES * 0.9);
          expect(Number(files)).toBeLessThanOrEqual(INODES);
          expect(isolation.notEnforced.join('\n')).toContain('rw mounts');
          expectNothingLeft();
        },
      );

      it('600 files of 1 MiB: held at diskBytes', async () => {
        const { outcome, report } = await fill(['many:ws:600:1024'], sandbox);
        const many = report('many:ws:600:1024');
        expect(many.code).toBe('ENOSPC');
        expect(many.n).toBeLessThanOrEqual(64);
        expect(many.n).toBeGreaterThan(32);
        expect(outcome.reason).toContain('diskBytes');
        expectNothingLeft();
      });

      it('20 000 empty files: held at the inode limit, the outcome names it', async () => {
        const { outcome, report } = await fill(['empty:ws:20000'], sandbox);
        const empty = report('empty:ws:20000');
        expect(empty.code).toBe('ENOSPC');
        expect(empty.n).toBeLessThanOrEqual(INODES);
        expect(empty.n).toBeGreaterThan(INODES * 0.9);
        expect(outcome.reason).toMatch(
          /the file-count limit \(inodes: \d+ in the workspace\) was reached: new files failed with ENOSPC/,
        );
        expect(outcome.limits).toContain('inodes');
        expectNothingLeft();
      });

      it(
        'the session folder is bounded too, keeps its files for the next run of the session, and the next run ' +
          'works',
        async () => {
          const first = await fill(['big:session:600'], sandbox);
          expect(first.report('big:session:600').code).toBe('ENOSPC');
          expect(first.report('big:session:600').n).toBeLessThanOrEqual(DISK);
          expect(first.outcome.reason).toContain('was reached in the session folder');
          // Everything the run wrote went into its capped image: the host disk holds no more than that.
          const sessionId = readdirSync(join(host.dataDir, 'quota', 'sessions')).map((n) => n.replace(/\.img$/, ''));
          for (const id of sessionId)
            expect(statSync(quotaImage(host.dataDir, 'sessions', id)).blocks * 512).toBeLessThanOrEqual(DISK);
          expectNothingLeft();
          // The same conversation: its session folder still holds the file (and says it was full all along)…
          const still = await fill(['count:session'], sandbox, first.conv);
          expect(still.report('count:session')).toEqual({ n: 1, code: 'ok' });
          expect(still.outcome.reason).toMatch(
            /the session folder was full from an earlier run for the whole run \(diskBytes: \d+ bytes\)/,
          );
          // …and a clean-up frees it: the next run works as if nothing happened.
          const second = await fill(
            ['count:session', 'clean:session', 'big:session:8', 'big:ws:8'],
            sandbox,
            first.conv,
          );
          expect(second.outcome.status, second.outcome.reason).toBe('completed');
          expect(second.report('count:session')).toEqual({ n: 1, code: 'ok' });
          expect(second.report('big:session:8')).toEqual({ n: 8 * MiB, code: 'ok' });
          expect(second.report('big:ws:8')).toEqual({ n: 8 * MiB, code: 'ok' });
          expect(second.outcome.reason).not.toContain('limit');
          expectNothingLeft();
        },
      );
    });
  }

  it('bwrap: the private /tmp and /dev/shm are bounded by diskBytes too, the rest of /dev is read-only', async () => {
    const { report, isolation } = await fill(['big:tmp:600', 'big:shm:600', 'big:dev:1'], 'bwrap');
    for (const action of ['big:tmp:600', 'big:shm:600']) {
      expect(report(action).code, action).toBe('ENOSPC');
      expect(report(action).n).toBeLessThanOrEqual(DISK);
    }
    expect(report('big:dev:1').code).toBe('EROFS');
    expect(isolation.enforced).toContain(
      `the private /tmp and /dev/shm ≤ ${DISK} bytes each (tmpfs size; their pages count against the memory ` +
        `limit); the rest of /dev is read-only`,
    );
  });

  it('the process backend says it bounds only the workspace and the session folder', async () => {
    const { isolation } = await fill(['count:ws'], 'process');
    expect(isolation.notEnforced).toContain(
      'disk: the process backend can write wherever the host user can (e.g. /tmp); only the workspace and the ' +
        'session folder are bounded',
    );
  });

  it('two runs of one session at once share its one filesystem (one loop device), and both end clean', async () => {
    const conv = 'shared-session';
    const [a, b] = await Promise.all([
      fill(['big:session:8'], 'bwrap', conv),
      fill(['many:session:4:64'], 'process', conv),
    ]);
    expect(a.report('big:session:8')).toEqual({ n: 8 * MiB, code: 'ok' });
    expect(b.report('many:session:4:64')).toEqual({ n: 4, code: 'ok' });
    const after = await fill(['count:session'], 'process', conv);
    // big.bin and f0–f3 in one folder: both runs wrote into the same filesystem.
    expect(after.report('count:session')).toEqual({ n: 5, code: 'ok' });
    expectNothingLeft();
  });

  it('two runs of one session mounting at once share one mount of its folder; the last release unmounts', async () => {
    const sessionId = 'ses_11111111-0000-0000-0000-000000000000';
    const ses = join(host.dataDir, 'sessions', sessionId);
    const limits = { diskBytes: 16 * MiB, inodes: 100 };
    const mountOf = (runId: string) =>
      mountRunDiskQuota(
        machine.diskQuota,
        host.dataDir,
        { runId, sessionId },
        { workspaceRoot: join(host.dataDir, 'workspaces', runId), sessionFolder: ses },
        limits,
      );
    // The second starts while the first is still making the session's image: mounting it twice would fail.
    const [a, b] = await Promise.all([mountOf('run_concurrent-a'), mountOf('run_concurrent-b')]);
    const sessionMounts = () => mountsOfData().filter((l) => l.includes(ses));
    expect(sessionMounts()).toHaveLength(1);
    expect(mountsOfData()).toHaveLength(3);
    await a.release({ keepWorkspace: false });
    expect(sessionMounts()).toHaveLength(1);
    await b.release({ keepWorkspace: false });
    expectNothingLeft();
  });

  it('--keep-workspace keeps the files (copied out of the image), with nothing left mounted', async () => {
    host.config.keepWorkspaces = true;
    try {
      const { outcome } = await fill(['many:ws:3:4'], 'bwrap');
      expect(outcome.status).toBe('completed');
      const kept = join(host.dataDir, 'workspaces', outcome.runId, 'filler');
      expect(readdirSync(kept).sort()).toEqual(['f0', 'f1', 'f2']);
      expect(statSync(join(kept, 'f2')).size).toBe(4096);
      expectNothingLeft();
    } finally {
      host.config.keepWorkspaces = false;
    }
  });

  it(
    '--keep-workspace copies out at most the quota: sparse files not expanded past it, any depth, no ' +
      'setuid/setgid bits, the outcome recorded',
    async () => {
      host.config.keepWorkspaces = true;
      try {
        const { outcome, report } = await fill(['deep:ws:1900', 'sparse:ws:3:40', 'setid:ws'], 'bwrap');
        expect(outcome.status, outcome.reason).toBe('completed');
        expect(report('deep:ws:1900')).toEqual({ n: 1900, code: 'ok' });
        const kept = join(host.dataDir, 'workspaces', outcome.runId);
        let bytes = 0;
        const setIds: string[] = [];
        const stack = [kept];
        while (stack.length > 0) {
          const dir = stack.pop()!;
          for (const name of readdirSync(dir)) {
            const path = join(dir, name);
            const st = lstatSync(path);
            if (st.mode & 0o6000) setIds.push(path);
            if (st.isDirectory()) stack.push(path);
            else if (st.isFile()) bytes += st.size;
          }
        }
        expect(setIds).toEqual([]);
        expect(bytes).toBeLessThanOrEqual(DISK); // three 40 MiB sparse files were 120 MiB apparent
        const note = readFileSync(join(kept, 'KEPT-WORKSPACE-NOTE.txt'), 'utf8');
        expect(note.match(/filler\/sparse\d: 41943040 bytes would pass the quota/g)).toHaveLength(2);
        expect(note).toMatch(/path too long/);
        expectNothingLeft();
      } finally {
        host.config.keepWorkspaces = false;
      }
    },
  );

  it('a mount that fails after mounting (as one its timeout killed can) leaves no mount and no image', async () => {
    // A named fake for a failure the real `mount` gives only under load (decisions MB2): the real mount, then exit 1.
    const tools = machine.diskQuota.tools!;
    const fake = join(mkdtempSync(join(tmpdir(), 'paddock-fake-mount-')), 'mount');
    writeFileSync(fake, `#!/bin/sh\n${tools.mount} "$@" || exit 2\necho 'mount: timed out (a fake)' >&2\nexit 1\n`, {
      mode: 0o755,
    });
    const runId = 'run_late-mount-0000-0000';
    const ws = join(host.dataDir, 'workspaces', runId);
    const image = quotaImage(host.dataDir, 'workspaces', runId);
    const late = { ...machine.diskQuota, tools: { ...tools, mount: fake } };
    const limits = { diskBytes: 16 * MiB, inodes: 100 };
    expect(() => mountQuota(late, ws, image, limits, 'workspace')).toThrow(/could not mount the workspace.*a fake/);
    expect(mountsOfData()).toEqual([]);
    expect(existsSync(image)).toBe(false);
    // The same through the helper spawner, as a run mounts.
    await expect(mountQuotaAsync(late, ws, image, limits, 'workspace')).rejects.toThrow(/a fake/);
    expect(mountsOfData()).toEqual([]);
    // (Its loop device detaches when the kernel's rundown work gets to it: not asserted here.)
    expect(existsSync(image)).toBe(false);
  });

  it('a host start unmounts quota filesystems a stopped host left behind, and drops their images', async () => {
    const runId = 'run_leftover-0000-0000';
    const sessionId = 'ses_00000000-0000-0000-0000-000000000000';
    const ws = join(host.dataDir, 'workspaces', runId);
    const ses = join(host.dataDir, 'sessions', sessionId);
    mountQuota(
      machine.diskQuota,
      ws,
      quotaImage(host.dataDir, 'workspaces', runId),
      { diskBytes: 16 * MiB, inodes: 100 },
      'workspace',
    );
    mountQuota(
      machine.diskQuota,
      ses,
      quotaImage(host.dataDir, 'sessions', sessionId),
      { diskBytes: 16 * MiB, inodes: 100 },
      'session folder',
    );
    writeFileSync(join(ws, 'left.txt'), 'left behind');
    expect(mountsOfData()).toHaveLength(2);
    // A real host start on the same data folder (any command opens the host).
    const started = await paddock(['runs', 'list', '--json'], { dataDir: host.dataDir });
    expect(started.exitCode, started.stderr).toBe(0);
    expect(mountsOfData()).toEqual([]);
    expect(loopsOfData()).toEqual([]);
    // Old enough to expire only later: the folders stay, unmounted; the workspace image is gone.
    expect(existsSync(quotaImage(host.dataDir, 'workspaces', runId))).toBe(false);
    expect(existsSync(join(ws, 'left.txt'))).toBe(false);
    expect(existsSync(quotaImage(host.dataDir, 'sessions', sessionId))).toBe(true);
  });

  it(
    'a host SIGKILLed mid-run leaves its quota mounts; the next start unmounts them (and a second Ctrl-C leaves ' +
      'none)',
    async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'paddock-quota-crash-'));
      const ours = () =>
        readFileSync('/proc/self/mountinfo', 'utf8')
          .split('\n')
          .filter((l) => l.includes(dataDir));
      const waitStarted = (child: ReturnType<typeof paddock>) =>
        new Promise<void>((resolve) =>
          child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('"type":"started"') && resolve()),
        );
      const crashed = paddock(['run', '--runner', 'test/fixtures/runnerDirs/hangs', '--text', 'x', '--json'], {
        dataDir,
      });
      await waitStarted(crashed);
      expect(ours()).toHaveLength(2); // the workspace and the session folder
      crashed.kill('SIGKILL');
      await crashed;
      expect(ours()).toHaveLength(2);
      const started = await paddock(['runs', 'list', '--json'], { dataDir });
      expect(started.exitCode, started.stderr).toBe(0);
      expect(ours()).toEqual([]);
      // The exit hook (any process.exit, e.g. a second Ctrl-C) detaches them at once.
      const stopped = paddock(['run', '--runner', 'test/fixtures/runnerDirs/ignores-cancel', '--text', 'x', '--json'], {
        dataDir,
      });
      await waitStarted(stopped);
      stopped.kill('SIGINT');
      await new Promise<void>((resolve) =>
        stopped.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('cancelling') && resolve()),
      );
      stopped.kill('SIGINT');
      expect((await stopped).exitCode).toBe(130);
      expect(ours()).toEqual([]);
    },
  );

  it('without the mechanism: the report says NOT enforced and a binding is refused unless it may degrade', () => {
    const without = {
      ...machine,
      diskQuota: { available: false, why: 'mounting a quota image needs root (the host runs unprivileged)' },
    };
    const limits = host.config.limits;
    const report = isolationReport('bwrap', limits, without, machine.cgroups);
    expect(report.notEnforced).toContain(
      `disk and file-count limits (diskBytes ${DISK}, inodes ${INODES}) of the workspace and session folder: ` +
        `no mechanism on this host (mounting a quota image needs root (the host runs unprivileged))`,
    );
    expect(report.enforced.some((g) => g.startsWith('disk:'))).toBe(false);
    const refused = decideSandbox({ id: 'b', sandbox: 'bwrap', allowDegrade: false }, without);
    expect(refused).toMatchObject({ ok: false, reason: 'limits_unavailable' });
    expect(refused.ok ? '' : refused.message).toContain('disk limit');
    expect(decideSandbox({ id: 'b', sandbox: 'bwrap', allowDegrade: true }, without)).toMatchObject({
      ok: true,
      degraded: [expect.stringContaining('disk')],
    });
    // A run that got no quota filesystem says so, even on a machine that has the mechanism.
    expect(
      isolationReport('process', limits, machine, machine.cgroups, undefined, 'none').notEnforced.join('\n'),
    ).toContain('not mounted for this run');
  });
});
