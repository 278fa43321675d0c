// Each backend's decisions from a given machine report (the probe is the only input): availability,
// degrading, identity, egress proxy, gateway socket, binds, network wording and report strength.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseLimits } from '../../../host/config/limits.js';
import { BACKENDS, sandboxBackend } from '../../../host/sandbox/backend.js';
import { decideSandbox } from '../../../host/sandbox/decide.js';
import type { MachineReport } from '../../../host/sandbox/probe.js';
import { DEFAULT_RUN_ID, type RunIdentity } from '../../../host/sandbox/runIdentity.js';

const DEDICATED: RunIdentity = { uid: DEFAULT_RUN_ID, gid: DEFAULT_RUN_ID, mechanism: 'dedicated', source: 'default' };
const INVOKING: RunIdentity = { uid: 1000, gid: 1000, mechanism: 'invoking-user', source: 'the user running paddock' };

/** A machine report as the probe would give it (nothing here probes the real machine). */
function machine(over: Partial<MachineReport> = {}): MachineReport {
  return {
    bwrap: { available: true, path: '/usr/bin/bwrap', version: 'bubblewrap 0.8.0' },
    prlimit: { available: true, path: '/usr/bin/prlimit' },
    cgroups: { memory: 'cgroup v2 memory.max', pids: 'cgroup v2 pids.max', killAll: 'cgroup.kill' },
    socat: { available: true },
    identity: DEDICATED,
    diskQuota: { available: false, why: 'not probed in this unit test' },
    ...over,
  };
}
const NO_BWRAP = machine({ bwrap: { available: false, why: 'bwrap: setting up uid map: Permission denied' } });
const limits = parseLimits();
const processBackend = sandboxBackend('process');
const bwrapBackend = sandboxBackend('bwrap');

describe('sandboxBackend()', () => {
  it('gives the implementation of each name, and refuses a name that is none', () => {
    expect(BACKENDS.map((name) => sandboxBackend(name).name)).toEqual(['process', 'bwrap']);
    expect(() => sandboxBackend('docker' as never)).toThrow('unknown sandbox backend "docker"');
    expect(() => sandboxBackend('__proto__' as never)).toThrow('unknown sandbox backend');
  });
});

describe('process backend', () => {
  it('is always available, never degrades, and is the host user', () => {
    expect(processBackend.available(NO_BWRAP)).toEqual({ ok: true });
    expect(processBackend.degradesTo).toBeUndefined();
    expect(processBackend.runIdentity(machine())).toBeUndefined();
    expect(processBackend.hostIdentity(machine())).toContain(`the host user (uid ${process.getuid?.()}`);
    expect(processBackend.strength).toBe('weak');
  });

  it(
    'binds nothing: grants are links and chmods, the gateway is on loopback, stdout is a pipe, no proxy even ' +
      'with an allowlist',
    () => {
      expect([processBackend.bindsGrants, processBackend.gatewayOnSocket, processBackend.stdoutFifo]).toEqual([
        false,
        false,
        false,
      ]);
      expect(processBackend.startsEgressProxy(true)).toBe(false);
      expect(
        processBackend.launchBinds({
          backend: 'process',
          runId: 'r',
          launch: { command: '/bin/true', args: [], cwd: '/', env: {} },
          workspace: '/w',
          readOnly: [],
          binds: [],
          limits,
        }),
      ).toBeUndefined();
    },
  );

  it("says its network is the host's, and that an allowlist is NOT enforced", () => {
    expect(processBackend.describeNetwork({ proxy: false, allow: [], allowPrivate: false })).toBe(
      'any destination the host can reach (the process backend has no network sandbox)',
    );
    expect(processBackend.describeNetwork({ proxy: false, allow: ['a.example:443'], allowPrivate: false })).toContain(
      'the egress allowlist (a.example:443) is NOT enforced',
    );
  });

  it(
    'reports filesystem, network, identity and tree containment as NOT enforced, and setsid kills from the ' +
      'machine',
    () => {
      const report = processBackend.report(limits, machine(), machine().cgroups);
      expect(report).toMatchObject({ backend: 'process', strength: 'weak' });
      expect(report.notEnforced.map((l) => l.split(':')[0])).toEqual(
        expect.arrayContaining([
          'a separate identity',
          'filesystem isolation',
          'network isolation',
          'containment of the process tree',
        ]),
      );
      expect(report.enforced).toContain('descendants that call setsid are killed at run end (cgroup.kill)');
      expect(report.notEnforced).toContain(
        'disk: the process backend can write wherever the host user can (e.g. /tmp); only the workspace and the ' +
          'session folder are bounded',
      );
      const noKill = processBackend.report(limits, machine(), {});
      expect(noKill.notEnforced).toContain(
        'descendants that call setsid are killed at run end: no mechanism on this host',
      );
      expect(noKill.notEnforced).toContain(
        `memory ≤ ${limits.memoryBytes} bytes for the whole run: no mechanism on this host`,
      );
    },
  );
});

describe('bwrap backend', () => {
  it(
    'is available only where the probe ran a sandbox; otherwise ' + "the probe's reason, and it degrades to process",
    () => {
      expect(bwrapBackend.available(machine())).toEqual({ ok: true });
      expect(bwrapBackend.available(NO_BWRAP)).toEqual({
        ok: false,
        why: 'bwrap: setting up uid map: Permission denied',
      });
      expect(bwrapBackend.degradesTo).toEqual({ backend: 'process', loses: 'without filesystem or network isolation' });
      expect(bwrapBackend.strength).toBe('strong');
    },
  );

  it(
    "a dedicated identity is handed files; bwrap's own mapping to " + 'the invoking user and an unusable one are not',
    () => {
      expect(bwrapBackend.runIdentity(machine())).toEqual(DEDICATED);
      expect(bwrapBackend.runIdentity(machine({ identity: INVOKING }))).toBeUndefined();
      expect(
        bwrapBackend.runIdentity(machine({ identity: { error: 'PADDOCK_RUN_UID=0 would map runs to root' } })),
      ).toBeUndefined();
      expect(bwrapBackend.hostIdentity(machine())).toBe(
        `host uid ${DEFAULT_RUN_ID} gid ${DEFAULT_RUN_ID} (uid 65534 inside): owns every file a run writes; ` +
          `setuid/setgid bits cleared at run end`,
      );
      expect(bwrapBackend.hostIdentity(machine({ identity: { error: 'no id' } }))).toBe(
        'none usable (no id): runs are refused',
      );
    },
  );

  it(
    'binds grants, serves the gateway on a socket, hands stdout through a FIFO; the proxy starts only for an ' +
      'allowlist',
    () => {
      expect([bwrapBackend.bindsGrants, bwrapBackend.gatewayOnSocket, bwrapBackend.stdoutFifo]).toEqual([
        true,
        true,
        true,
      ]);
      expect(bwrapBackend.startsEgressProxy(false)).toBe(false);
      expect(bwrapBackend.startsEgressProxy(true)).toBe(true);
    },
  );

  it('describes loopback-only, or the proxy with its allowlist and private-address rule', () => {
    expect(bwrapBackend.describeNetwork({ proxy: false, allow: ['ignored:1'], allowPrivate: true })).toBe(
      'none: own network namespace with only loopback',
    );
    expect(bwrapBackend.describeNetwork({ proxy: true, allow: ['a:1', 'b:2'], allowPrivate: false })).toBe(
      'only through the host egress proxy, to a:1, b:2; names resolved by the host; private and loopback ' +
        'addresses refused; every destination audited; while the run is tainted every destination needs a ' +
        'one-time approval; a plain-HTTP request carrying a secret value the host knows is blocked (HTTPS bodies ' +
        'are not seen)',
    );
    expect(bwrapBackend.describeNetwork({ proxy: true, allow: [], allowPrivate: true, beyondList: true })).toMatch(
      new RegExp(
        "^only through the host egress proxy, to no listed destination and any other the run's policy allows " +
          "\\(a rule or a person's approval\\); .*private and loopback addresses allowed",
      ),
    );
  });

  it(
    "lists the launch's binds for explain: the workspace rw, read-only paths ro, the sockets at their fixed " +
      'places',
    () => {
      const binds = bwrapBackend.launchBinds({
        backend: 'bwrap',
        runId: 'r',
        launch: { command: '/bin/true', args: [], cwd: '/w', env: {} },
        workspace: '/w',
        readOnly: ['/srv/runner'],
        binds: [{ source: '/data/repo', target: '/w/in/mounts/repo', readOnly: true }],
        limits,
        egressSocket: '/s/e.sock',
        gatewaySocket: '/s/g.sock',
      })!;
      expect(binds).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ source: '/w', target: '/w', mode: 'rw' }),
          expect.objectContaining({ source: '/srv/runner', target: '/srv/runner', mode: 'ro' }),
          expect.objectContaining({ source: '/data/repo', target: '/w/in/mounts/repo', mode: 'ro' }),
          expect.objectContaining({ source: '/s/e.sock', target: '/run/paddock/egress.sock' }),
          expect.objectContaining({ source: '/s/g.sock', target: '/run/paddock/gateway.sock' }),
        ]),
      );
      expect(
        binds
          .filter((b) => b.mode === 'rw')
          .map((b) => b.source)
          .sort(),
      ).toEqual(['/s/e.sock', '/s/g.sock', '/w']);
    },
  );

  it('reports namespaces and its private /tmp; an unusable identity is listed as refusing runs', () => {
    const report = bwrapBackend.report(limits, machine(), machine().cgroups, {
      proxy: true,
      allow: ['a:1'],
      allowPrivate: false,
    });
    expect(report).toMatchObject({
      backend: 'bwrap',
      strength: 'strong',
      network: expect.stringContaining('only through the host egress proxy'),
    });
    expect(report.enforced[0]).toContain('own user, pid, mount, network, ipc, uts and cgroup namespaces');
    expect(report.enforced).toContain(
      `the private /tmp and /dev/shm ≤ ${limits.diskBytes} bytes each (tmpfs size; their pages count against ` +
        `the memory limit); the rest of /dev is read-only`,
    );
    // A pid namespace kills setsid escapees: no separate line about cgroup.kill.
    expect([...report.enforced, ...report.notEnforced].join('\n')).not.toContain('descendants that call setsid');
    const broken = bwrapBackend.report(limits, machine({ identity: { error: 'no id' } }), {});
    expect(broken.notEnforced).toContain('a run identity: no id (bwrap runs are refused)');
  });
});

describe('bwrap prepare fails closed and leaves nothing behind', () => {
  const root = mkdtempSync(join(tmpdir(), 'paddock-backend-unit-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const request = (workspace: string) => ({
    backend: 'bwrap' as const,
    runId: `unit-${Date.now()}`,
    launch: { command: '/bin/true', args: [], cwd: workspace, env: {} },
    workspace,
    readOnly: [],
    binds: [],
    limits,
    stdoutFifo: true,
  });

  it("on a machine without bwrap: refuses with the probe's reason, before anything is made", () => {
    const ws = join(root, 'no-bwrap');
    mkdirSync(ws);
    expect(() => bwrapBackend.prepare(request(ws), NO_BWRAP)).toThrow(
      'the bwrap sandbox is not available on this host: bwrap: setting up uid map: Permission denied',
    );
    expect(readdirSync(root)).toEqual(['no-bwrap']);
  });

  it('with an unusable run identity: refuses before anything is made (no cgroup, no stdout FIFO)', () => {
    const ws = join(root, 'no-identity');
    mkdirSync(ws);
    const broken = machine({ identity: { error: 'PADDOCK_RUN_UID=0 would map runs to root' }, cgroups: {} });
    expect(() => bwrapBackend.prepare(request(ws), broken)).toThrow(
      'cannot map the sandbox to an unprivileged host identity: PADDOCK_RUN_UID=0 would map runs to root',
    );
    expect(existsSync(`${ws}.stdout`)).toBe(false);
    expect(readdirSync(root).sort()).toEqual(['no-bwrap', 'no-identity']);
  });
});

describe('decideSandbox asks the backend (same refusals and degrade notes as before the interface)', () => {
  it('bwrap unavailable: sandbox_unavailable naming the reason, or, allowed, process with what is lost', () => {
    expect(decideSandbox({ id: 'b', sandbox: 'bwrap', allowDegrade: false }, NO_BWRAP)).toEqual({
      ok: false,
      reason: 'sandbox_unavailable',
      message:
        'binding "b" asks for the bwrap sandbox, which this host cannot run (bwrap: setting up uid map: ' +
        'Permission denied); refusing rather than running it less isolated',
    });
    const degraded = decideSandbox({ id: 'b', sandbox: 'bwrap', allowDegrade: true }, NO_BWRAP);
    expect(degraded).toMatchObject({ ok: true, backend: 'process' });
    expect(degraded.ok && degraded.degraded[0]).toBe(
      'bwrap unavailable (bwrap: setting up uid map: Permission denied): running with the process backend, ' +
        'without filesystem or network isolation',
    );
  });

  it('process on the same machine: no sandbox refusal (only the limits decide)', () => {
    const d = decideSandbox({ id: 'p', sandbox: 'process', allowDegrade: true }, NO_BWRAP);
    expect(d).toMatchObject({ ok: true, backend: 'process' });
    expect(d.ok && d.degraded.join('\n')).not.toContain('unavailable');
  });
});
