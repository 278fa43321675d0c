import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { HostConfig } from '../../host/config/hostConfig.js';
import { parseLimits } from '../../host/config/limits.js';
import { readCgroupLayout } from '../../host/sandbox/cgroups.js';
import { primeMachineProbe, probeMachine, type MachineReport } from '../../host/sandbox/probe.js';
import { openHost } from '../../host/start.js';
import { repoPath } from '../helpers/fixtures.js';

/** The report if the probe has finished already (a resolved promise wins the race), else 'pending'. */
const finished = (p: Promise<MachineReport>) => Promise.race([p, Promise.resolve('pending' as const)]);

// In this order, in this file's own process: the first test sees no probe made yet.
describe('the machine probe run without blocking (primeMachineProbe, openHost)', () => {
  it('openHost returns with the probe finished: a run plans against it without probing again', async () => {
    const config: HostConfig = {
      dataDir: mkdtempSync(join(tmpdir(), 'paddock-probe-start-')),
      limits: parseLimits({}),
      runnerDirs: [],
      logLevel: 'silent',
      keepWorkspaces: false,
    };
    // Nothing probed yet in this process (the first test of its file): only openHost can have started a probe.
    const host = await openHost(config);
    try {
      const report = await finished(primeMachineProbe());
      expect(report).not.toBe('pending');
      expect(probeMachine()).toBe(report); // and the blocking callers (plan, provision) get the same report
    } finally {
      await host.close();
    }
  });

  it('gives the report the blocking probe gives, and lets the event loop run while its helpers run', async () => {
    let settled = false;
    const primed = primeMachineProbe(true).then((r) => ((settled = true), r));
    expect(primeMachineProbe()).toBe(primeMachineProbe()); // one probe in flight, shared
    let turns = 0;
    await new Promise<void>((resolve) => {
      const spin = () => (settled ? resolve() : (turns++, setImmediate(spin)));
      setImmediate(spin);
    });
    // A probe that blocked would have settled before the first turn of the event loop.
    expect(turns).toBeGreaterThan(0);
    const report = await primed;
    expect(probeMachine()).toBe(report);
    // Every mechanism really tried, and the same answer as the blocking probe's, field by field.
    expect(report.bwrap.available, report.bwrap.why).toBe(true);
    expect(report.diskQuota.available, report.diskQuota.why).toBe(true);
    expect(report.cgroups.memory && report.cgroups.pids, report.cgroups.why).toBeTruthy();
    expect(probeMachine(true)).toEqual(report);
  });

  it('a blocking probe made while one is in flight is not overwritten by the older one', async () => {
    const inFlight = primeMachineProbe(true);
    const before = process.env.PADDOCK_BWRAP;
    process.env.PADDOCK_BWRAP = '/nonexistent/bwrap';
    let blocking: MachineReport;
    try {
      blocking = probeMachine(true);
    } finally {
      if (before === undefined) delete process.env.PADDOCK_BWRAP;
      else process.env.PADDOCK_BWRAP = before;
    }
    expect(blocking.bwrap).toEqual({
      available: false,
      why: 'PADDOCK_BWRAP=/nonexistent/bwrap is not an existing absolute path',
    });
    // The in-flight probe began before PADDOCK_BWRAP changed; the newer, blocking report stays the one in use.
    expect(await inFlight).toBe(blocking);
    expect(probeMachine()).toBe(blocking);
    expect((await primeMachineProbe(true)).bwrap.available).toBe(true);
  });

  it('a bwrap that cannot make the sandbox is reported unavailable with its own error, by either driver', async () => {
    const before = process.env.PADDOCK_BWRAP;
    // A "bwrap" that runs but cannot create namespaces: the probe's real sandbox attempt fails, never assumed.
    process.env.PADDOCK_BWRAP = '/bin/false';
    try {
      const primed = await primeMachineProbe(true);
      const blocking = probeMachine(true);
      for (const report of [primed, blocking]) {
        expect(report.bwrap.available).toBe(false);
        expect(report.bwrap.why).toMatch(
          /^bwrap cannot create its namespaces here: Command failed: \/bin\/false --version/,
        );
      }
    } finally {
      if (before === undefined) delete process.env.PADDOCK_BWRAP;
      else process.env.PADDOCK_BWRAP = before;
      probeMachine(true);
    }
  });

  it('a host that exits while the disk-quota probe has its image mounted leaves no mount and no image behind', () => {
    // A child host drives the probe by hand up to its unmount step (image made and mounted), then exits at once, as
    // a second Ctrl-C does while an asynchronous probe is in flight.
    const script = join(mkdtempSync(join(tmpdir(), 'paddock-probe-exit-')), 'exit.ts');
    writeFileSync(
      script,
      [
        `import { execFileSync } from 'node:child_process';`,
        `import { diskQuotaProbe } from ${JSON.stringify(repoPath('host/sandbox/diskQuota.ts'))};`,
        `const probe = diskQuotaProbe();`,
        `let next = probe.next();`,
        `while (!next.done && next.value.file !== '/usr/bin/umount' && next.value.file !== '/bin/umount') {`,
        `  const { file, args, env } = next.value;`,
        `  next = probe.next({ ok: true, stdout: execFileSync(file, args, { env, encoding: 'utf8' }) });`,
        `}`,
        `if (next.done) throw new Error('the probe ended before its unmount step');`,
        `process.stdout.write(next.value.args[0]);`,
        `process.exit(0);`,
      ].join('\n'),
    );
    const point = execFileSync(process.execPath, ['--import', 'tsx', script], {
      cwd: repoPath('.'),
      encoding: 'utf8',
    });
    expect(point).toMatch(/\/paddock-quota-probe-[^/]+\/mnt$/);
    expect(readFileSync('/proc/self/mountinfo', 'utf8')).not.toContain(point);
    expect(existsSync(point)).toBe(false);
    expect(existsSync(join(point, '..', 'probe.img'))).toBe(false);
  });

  it('leaves none of its throwaway cgroups behind, even when the process goes on to exit at once', async () => {
    const layout = readCgroupLayout();
    const parents = [...(layout.v2 ? [layout.v2] : []), ...layout.v1.values()].map((d) => join(d, 'paddock'));
    const mine = () =>
      parents
        .flatMap((p) => (existsSync(p) ? readdirSync(p) : []))
        .filter((n) => n.startsWith(`probe-${process.pid}-`));
    const report = probeMachine(true);
    expect(report.cgroups.pids, report.cgroups.why).toBeTruthy();
    // Checked before any await: nothing is left for a later tick that an exiting process would never run.
    expect(mine()).toEqual([]);
    await primeMachineProbe(true);
    expect(mine()).toEqual([]);
  });
});
