import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { DiskQuotaMachine } from '../../host/sandbox/diskQuota.js';
import { probeMachine } from '../../host/sandbox/probe.js';
import { mountRunDiskQuota, type RunDiskQuota } from '../../host/sandbox/runDiskQuota.js';
import { textEvent } from '../../sdk/protocol/runParams.js';
import { tempHost } from '../helpers/host.js';

// Real loop devices and ext4 (root, as test/integration/diskQuota.test.ts): a burst of runs whose quota helpers far
// outnumber the helper spawner's bound, made small (2) by the host's configuration. The bound is the machine's
// defence against ≈ 800 `mount -o loop` at once, each reading every loop device (docs/benchmarks.md, "Many runs").
const BOUND = 2;
const machine = probeMachine().diskQuota;
const host = tempHost({
  helperConcurrency: BOUND,
  maxConcurrentRuns: 8,
  limits: { diskBytes: 16 * 1024 * 1024, inodes: 256 },
});
afterAll(() => host.close());

/** Mounts of this host's data folder, from the kernel's table. */
const mountsOfData = () =>
  readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter((l) => l.includes(host.dataDir));

/**
 * The machine's quota tools, each behind a shim that marks itself running in `<dir>/in` for its whole life (held at
 * least 100 ms, so that helpers started together overlap) and writes how many were running as it entered.
 */
function countingMachine(dir: string): DiskQuotaMachine {
  mkdirSync(join(dir, 'in'));
  const shim = (name: string, real: string) => {
    const path = join(dir, name);
    writeFileSync(
      path,
      `#!/bin/sh\nmkdir ${dir}/in/$$\nls ${dir}/in | wc -l >> ${dir}/seen\nsleep 0.1\n${real} "$@"\nrc=$?\n` +
        `rmdir ${dir}/in/$$\nexit $rc\n`,
    );
    chmodSync(path, 0o755);
    return path;
  };
  const tools = machine.tools!;
  return {
    ...machine,
    tools: { mkfs: shim('mkfs', tools.mkfs), mount: shim('mount', tools.mount), umount: shim('umount', tools.umount) },
  };
}

describe('a burst of quota mounts larger than the helper bound', () => {
  it('this machine can mount quota images (else: run as root with loop devices and e2fsprogs)', () => {
    expect(machine, machine.why).toMatchObject({ available: true });
  });

  it('every mkfs, mount and umount waits its turn: at most the bound run at once, and every run mounts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'paddock-quota-burst-'));
    const counting = countingMachine(dir);
    // 12 runs in 12 sessions: 48 helpers to mount (mkfs and mount of each workspace and session folder) at once.
    const quotas: RunDiskQuota[] = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        mountRunDiskQuota(
          counting,
          host.dataDir,
          { runId: `run_burst${i}`, sessionId: `ses_burst${i}` },
          {
            workspaceRoot: join(host.dataDir, 'burst', `ws${i}`),
            sessionFolder: join(host.dataDir, 'burst', `session${i}`),
          },
          { diskBytes: 16 * 1024 * 1024, inodes: 256 },
        ),
      ),
    );
    expect(mountsOfData()).toHaveLength(24);
    await Promise.all(quotas.map((q) => q.release({ keepWorkspace: false })));
    expect(mountsOfData()).toEqual([]);
    const seen = readFileSync(join(dir, 'seen'), 'utf8').trim().split('\n').map(Number);
    expect(seen).toHaveLength(48 + 24);
    expect(Math.max(...seen), 'helpers running at once').toBeLessThanOrEqual(BOUND);
    expect(readdirSync(join(dir, 'in'))).toEqual([]);
  });

  it('a burst of real runs, each with its workspace and session quota, all complete under the bound', async () => {
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        host.runs.runAdHoc({
          runner: 'echo',
          event: textEvent(`burst ${i}`, { conversation: { type: 'private', id: `burst-${i}` } }),
          sandbox: 'process',
        }),
      ),
    );
    expect(outcomes.map((o) => `${o.status}: ${o.reason}`)).toEqual(
      Array(8).fill('completed: runner completed the run'),
    );
    expect(mountsOfData()).toEqual([]);
    const workspaces = join(host.dataDir, 'quota', 'workspaces');
    expect(existsSync(workspaces) ? readdirSync(workspaces) : []).toEqual([]);
  });
});
