import { describe, expect, it } from 'vitest';
import { parseLimits } from '../../../host/config/limits.js';
import { isolationReport } from '../../../host/sandbox/prepare.js';
import type { MachineReport } from '../../../host/sandbox/probe.js';
import {
  DEFAULT_RUN_ID,
  firstSubordinateId,
  privilegedIdentityWarnings,
  resolveRunIdentity,
} from '../../../host/sandbox/runIdentity.js';

const PASSWD = [
  'root:x:0:0:root:/root:/bin/bash',
  'ada:x:1000:1000::/home/ada:/bin/bash',
  'svc:x:1001:1001::/srv:/usr/sbin/nologin',
  'op:x:1002:10::/home/op:/bin/bash',
  'paddock:x:1003:1003::/nonexistent:/usr/sbin/nologin',
].join('\n');
const GROUP = ['root:x:0:', 'wheel:x:10:', 'sudo:x:27:ada', 'docker:x:998:svc', 'ada:x:1000:', 'paddock:x:1003:'].join(
  '\n',
);
const ROOT = { uid: 0, gid: 0 };
const files =
  (subuid = '', subgid = '') =>
  (path: string) =>
    path === '/etc/subuid' ? subuid : path === '/etc/subgid' ? subgid : '';

describe('which host identity runs get (resolveRunIdentity)', () => {
  it("a root host: the default dedicated id, root's /etc/subuid range, or PADDOCK_RUN_UID/GID", () => {
    expect(resolveRunIdentity({}, ROOT, files())).toEqual({
      uid: DEFAULT_RUN_ID,
      gid: DEFAULT_RUN_ID,
      mechanism: 'dedicated',
      source: 'default',
    });
    expect(resolveRunIdentity({}, ROOT, files('ada:100000:65536\nroot:200000:65536\n'))).toMatchObject({
      uid: 200000,
      gid: 200000,
      mechanism: 'dedicated',
    });
    expect(resolveRunIdentity({ PADDOCK_RUN_UID: '1003' }, ROOT, files('root:200000:65536'))).toEqual({
      uid: 1003,
      gid: 1003,
      mechanism: 'dedicated',
      source: 'PADDOCK_RUN_UID',
    });
    expect(resolveRunIdentity({ PADDOCK_RUN_UID: '1003', PADDOCK_RUN_GID: '1004' }, ROOT, files())).toMatchObject({
      uid: 1003,
      gid: 1004,
    });
  });

  it('never root, never garbage: the variable is named', () => {
    expect(resolveRunIdentity({ PADDOCK_RUN_UID: '0' }, ROOT, files())).toEqual({
      error: 'PADDOCK_RUN_UID=0 would map runs to root; pick an unprivileged id',
    });
    expect(resolveRunIdentity({ PADDOCK_RUN_UID: '1003', PADDOCK_RUN_GID: '0' }, ROOT, files())).toEqual({
      error: 'PADDOCK_RUN_GID=0 would map runs to root; pick an unprivileged id',
    });
    for (const bad of ['-1', 'root', '1e3', ' 5', '4294967295', '65535', '99999999999'])
      expect(resolveRunIdentity({ PADDOCK_RUN_UID: bad }, ROOT, files())).toHaveProperty('error');
    // A subordinate range starting at 0 is not a usable default.
    expect(resolveRunIdentity({}, ROOT, files('root:0:65536'))).toMatchObject({ uid: DEFAULT_RUN_ID });
  });

  it('an unprivileged host: bwrap maps the sandbox to that user; the variables do not apply', () => {
    expect(resolveRunIdentity({ PADDOCK_RUN_UID: '5' }, { uid: 1000, gid: 1000 }, files())).toMatchObject({
      uid: 1000,
      gid: 1000,
      mechanism: 'invoking-user',
    });
  });

  it('/etc/subuid parsing: by name or uid, malformed lines ignored', () => {
    expect(firstSubordinateId('root:x:1\nroot:300000:0\n0:400000:10\n', 'root', 0)).toBe(400000);
    expect(firstSubordinateId('', 'root', 0)).toBeUndefined();
  });
});

describe("doctor's decision: is a mapping privileged (privilegedIdentityWarnings)", () => {
  it('root, the root group, a member or primary member of a privileged group, a privileged gid: each named', () => {
    expect(privilegedIdentityWarnings({ uid: 0, gid: 0 }, PASSWD, GROUP)).toEqual([
      'runs map to host uid 0 (root): a file a run writes in a read-write mount is owned by root on the host',
      'runs map to host gid 0 (root group)',
    ]);
    expect(privilegedIdentityWarnings({ uid: 1000, gid: 1000 }, PASSWD, GROUP)).toEqual([
      'runs map to host user "ada" (uid 1000), a member of the "sudo" group',
    ]);
    expect(privilegedIdentityWarnings({ uid: 1001, gid: 1001 }, PASSWD, GROUP)).toEqual([
      'runs map to host user "svc" (uid 1001), a member of the "docker" group',
    ]);
    expect(privilegedIdentityWarnings({ uid: 1002, gid: 5000 }, PASSWD, GROUP)).toEqual([
      'runs map to host user "op" (uid 1002), whose primary group is "wheel"',
    ]);
    expect(privilegedIdentityWarnings({ uid: DEFAULT_RUN_ID, gid: 27 }, PASSWD, GROUP)).toEqual([
      'runs map to host gid 27, the "sudo" group',
    ]);
  });

  it('a dedicated id or an unprivileged service user: no warning', () => {
    expect(privilegedIdentityWarnings({ uid: DEFAULT_RUN_ID, gid: DEFAULT_RUN_ID }, PASSWD, GROUP)).toEqual([]);
    expect(privilegedIdentityWarnings({ uid: 1003, gid: 1003 }, PASSWD, GROUP)).toEqual([]);
  });
});

describe('the run report says who a run is on the host', () => {
  const machine = (identity: MachineReport['identity']): MachineReport => ({
    bwrap: { available: true },
    prlimit: { available: true },
    cgroups: {},
    socat: { available: true },
    identity,
    diskQuota: { available: false, why: 'not probed in this unit test' },
  });
  const limits = parseLimits();

  it('bwrap: the host uid/gid behind 65534 and how; a privileged one is listed as NOT enforced', () => {
    const dedicated = isolationReport(
      'bwrap',
      limits,
      machine({ uid: DEFAULT_RUN_ID, gid: DEFAULT_RUN_ID, mechanism: 'dedicated', source: 'default' }),
      {},
    );
    expect(dedicated.enforced.join('\n')).toContain(
      `uid/gid 65534 inside, which is host uid ${DEFAULT_RUN_ID} gid ${DEFAULT_RUN_ID} outside (a user ` +
        `namespace paddock maps to a dedicated id, the default)`,
    );
    expect(dedicated.notEnforced.filter((g) => g.includes('identity'))).toEqual([]);
    const sudo = isolationReport(
      'bwrap',
      limits,
      machine({ uid: DEFAULT_RUN_ID, gid: 27, mechanism: 'dedicated', source: 'PADDOCK_RUN_GID' }),
      {},
    );
    expect(sudo.notEnforced).toContain('an unprivileged host identity: runs map to host gid 27, the "sudo" group');
    const broken = isolationReport(
      'bwrap',
      limits,
      machine({ error: 'PADDOCK_RUN_UID=0 would map runs to root; pick an unprivileged id' }),
      {},
    );
    expect(broken.notEnforced).toContain(
      'a run identity: PADDOCK_RUN_UID=0 would map runs to root; pick an unprivileged id (bwrap runs are refused)',
    );
  });

  it('process: the runner is the host user, and a root host says so plainly', () => {
    const report = isolationReport(
      'process',
      limits,
      machine({ uid: DEFAULT_RUN_ID, gid: DEFAULT_RUN_ID, mechanism: 'dedicated', source: 'default' }),
      {},
    );
    const uid = process.getuid?.();
    expect(report.notEnforced).toContain(
      `a separate identity: the runner runs as the host user (uid ` +
        `${uid}${uid === 0 ? ", root: whatever it writes is root's, setuid bits included" : ''})`,
    );
  });
});
