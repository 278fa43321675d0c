import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigRepo } from '../../host/bindings/configRepo.js';
import { explainBinding } from '../../host/bindings/explain.js';
import type { Binding } from '../../host/bindings/schema.js';
import { clearInterruptedSetIdBits } from '../../host/recovery/setIdLeftovers.js';
import { discoverRunners } from '../../host/plugins/catalog.js';
import { HARNESS_DIR } from '../../host/harness/harnesses.js';
import { quotaImage } from '../../host/sandbox/diskQuota.js';
import { clearSetIdBits } from '../../host/sandbox/runIdentityFiles.js';
import { probeMachine } from '../../host/sandbox/probe.js';
import { identityWarnings, type RunIdentity } from '../../host/sandbox/runIdentity.js';
import { repoPath } from '../helpers/fixtures.js';
import { chatEvent, FIXTURE_RUNNERS, tempHost } from '../helpers/host.js';

// Item 4 of issue 11: bwrap run by root used to map the sandbox's uid 65534 to host uid 0, so a
// file a run made in a read-write mount was root's on the host, setuid bit included.
const machine = probeMachine();
const identity = machine.identity as RunIdentity;

/** Every entry under `dir` (links not followed), with its host owner and mode. */
function walk(dir: string): { path: string; uid: number; gid: number; mode: number; link: boolean }[] {
  const out: { path: string; uid: number; gid: number; mode: number; link: boolean }[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const stat = lstatSync(path);
    out.push({ path, uid: stat.uid, gid: stat.gid, mode: stat.mode & 0o7777, link: stat.isSymbolicLink() });
    if (stat.isDirectory()) out.push(...walk(path));
  }
  return out;
}

/** A folder under a mount root the run identity may write (what the admin guide says to do). */
function grantedRoot(): { root: string; repo: string } {
  const root = mkdtempSync(join(tmpdir(), 'paddock-ident-'));
  chmodSync(root, 0o755);
  const repo = join(root, 'repo');
  mkdirSync(repo);
  chownSync(repo, identity.uid, identity.gid);
  return { root, repo };
}

const hosts: { close(): Promise<void> }[] = [];
afterAll(async () => {
  for (const h of hosts) await h.close();
});

async function dispatchAttack(h: ReturnType<typeof tempHost>, bot: string) {
  const ticket = await h.dispatcher.dispatch(chatEvent({ platform: 'ident', bot }));
  if (ticket.status === 'duplicate') throw new Error('duplicate');
  const outcome = await ticket.done;
  const text = (outcome.result?.output?.parts[0] as { text?: string } | undefined)?.text;
  return { outcome, runId: ticket.runId, results: text ? (JSON.parse(text) as Record<string, string>) : {} };
}

describe('run identity: bwrap runs of a root host are a dedicated unprivileged host uid', () => {
  it('this host (root) maps runs to a dedicated uid that is neither root nor privileged', () => {
    expect(process.getuid?.()).toBe(0);
    expect(machine.bwrap, machine.bwrap.why).toMatchObject({ available: true });
    expect(identity).toMatchObject({ mechanism: 'dedicated' });
    expect(identity.uid).not.toBe(0);
    expect(identity.gid).not.toBe(0);
    expect(identityWarnings(identity)).toEqual([]);
  });

  it(
    "setuid/setgid plants in a rw mount, the workspace and the session folder are the run uid's on the host and " +
      'lose their bits at run end',
    async () => {
      const { root, repo } = grantedRoot();
      writeFileSync(join(repo, 'README'), 'admin file\n');
      chownSync(join(repo, 'README'), identity.uid, identity.gid);
      const h = tempHost({ mountRoots: [root] });
      hosts.push(h);
      h.config.keepWorkspaces = true; // so the workspace can be inspected after the run
      const actions = [
        'identity',
        'plant:4755:in/mounts/repo/suid-id',
        'plant:2755:in/mounts/repo/deep/er/sgid-id',
        'plant:6755:in/mounts/repo/.hidden-both',
        'plant:4755:out/suid-id',
        'plant:4755:home/.local/bin/suid-id',
        'plant:4755:{session}/suid-id',
        'plant:2755:{session}/nested/sgid-id',
        // Other shapes of the same goal: a host setuid binary linked in, ownership given to root.
        'link:/usr/bin/su:in/mounts/repo/su-link',
        'link:/usr/bin/passwd:out/passwd-link',
        'chown:0:in/mounts/repo/suid-id',
        'chown:0:out/suid-id',
        'symlink:/usr/bin/su:in/mounts/repo/su-symlink',
      ];
      h.apply({
        resources: { mounts: [{ id: 'repo', path: repo, mode: 'rw' }] },
        bindings: [
          {
            id: 'plant',
            runner: 'tries-sandbox-escapes',
            route: { platform: 'ident', bot: 'plant' },
            workspace: 'mount',
            grants: { mounts: ['repo'] },
            config: { actions },
          },
        ],
      });
      const { outcome, runId, results } = await dispatchAttack(h, 'plant');
      expect(outcome.status, outcome.reason).toBe('completed');

      // Inside: uid/gid 65534, no supplementary groups, no capabilities.
      expect(results.identity).toBe(
        'ok uid=65534\t65534\t65534\t65534 gid=65534\t65534\t65534\t65534 groups= capeff=0000000000000000 ' +
          'capprm=0000000000000000',
      );
      // The bits were really set inside (so it is the host that cleared them below).
      for (const a of actions.filter((x) => x.startsWith('plant:')))
        expect(results[a], a).toBe(`ok ${a.split(':')[1]}`);
      // No host setuid binary can be linked in, and nothing can be given to root.
      expect(results['link:/usr/bin/su:in/mounts/repo/su-link']).toMatch(/^(EPERM|EXDEV|EACCES)$/);
      expect(results['link:/usr/bin/passwd:out/passwd-link']).toMatch(/^(EPERM|EXDEV|EACCES)$/);
      expect(results['chown:0:in/mounts/repo/suid-id']).toMatch(/^(EPERM|EINVAL)$/);
      expect(results['chown:0:out/suid-id']).toMatch(/^(EPERM|EINVAL)$/);

      const session = join(h.dataDir, 'sessions', h.store.run(runId)!.sessionId);
      const workspace = join(h.dataDir, 'workspaces', runId);
      const planted = [
        join(repo, 'suid-id'),
        join(repo, 'deep/er/sgid-id'),
        join(repo, '.hidden-both'),
        join(workspace, 'out/suid-id'),
        join(workspace, 'home/.local/bin/suid-id'),
        join(session, 'suid-id'),
        join(session, 'nested/sgid-id'),
      ];
      // Between runs the session folder's files are inside its quota image: look at them there (read-only).
      const sessionImage = quotaImage(h.dataDir, 'sessions', h.store.run(runId)!.sessionId);
      execFileSync('/usr/bin/mount', ['-t', 'ext4', '-o', 'loop,ro,nosuid,nodev', sessionImage, session]);
      try {
        for (const path of planted) {
          const stat = statSync(path);
          expect({ path, uid: stat.uid, gid: stat.gid, setid: stat.mode & 0o6000 }).toEqual({
            path,
            uid: identity.uid,
            gid: identity.gid,
            setid: 0,
          });
          expect(stat.mode & 0o111, path).not.toBe(0); // still the runner's executable, only without the bits
        }
        // Nothing the run left anywhere it could write is root's or carries a setuid/setgid bit.
        for (const dir of [repo, session, workspace]) {
          for (const entry of walk(dir)) {
            expect(entry.uid, entry.path).toBe(identity.uid);
            if (!entry.link) expect(entry.mode & 0o6000, entry.path).toBe(0);
          }
        }
      } finally {
        execFileSync('/usr/bin/umount', [session]);
      }
      expect(lstatSync(join(repo, 'su-symlink')).isSymbolicLink()).toBe(true);
      expect(statSync('/usr/bin/su').mode & 0o4000).toBe(0o4000); // the link was never followed
      // The host says what it cleared.
      const cleared = h.store.audit.records({ runId }).find((r) => r.type === 'run.setid_cleared');
      const files = (cleared?.data as { files: { path: string; cleared: boolean }[] }).files;
      expect(
        files
          .filter((f) => f.cleared)
          .map((f) => f.path)
          .sort(),
      ).toEqual(planted.sort());
    },
  );

  it('a rw mount the run uid cannot write is refused before the run starts, naming the mount and the uid', async () => {
    const root = mkdtempSync(join(tmpdir(), 'paddock-ident-'));
    chmodSync(root, 0o755);
    const repo = join(root, 'repo');
    mkdirSync(repo, { mode: 0o755 }); // root's, as an admin's folder would be before granting it
    const h = tempHost({ mountRoots: [root] });
    hosts.push(h);
    h.apply({
      resources: { mounts: [{ id: 'repo', path: repo, mode: 'rw' }] },
      bindings: [
        {
          id: 'nogrant',
          runner: 'tries-sandbox-escapes',
          route: { platform: 'ident', bot: 'nogrant' },
          workspace: 'mount',
          grants: { mounts: ['repo'] },
          config: { actions: ['write:in/mounts/repo/x'] },
        },
      ],
    });
    const explain = () => {
      const repoCfg = new ConfigRepo(h.store);
      return explainBinding(
        repoCfg.binding('nogrant').spec as Binding,
        discoverRunners([FIXTURE_RUNNERS]),
        repoCfg.snapshot().resources,
        h.config.limits,
        { dataDir: h.dataDir, harnessDir: HARNESS_DIR, mountRoots: [root] },
      );
    };
    const before = explain();
    expect(before.worstCase.writable).toContain(
      `${repo} at ${join(h.dataDir, 'workspaces', '<runId>', 'in', 'mounts', 'repo')} — REFUSED at run start: ` +
        `host uid ${identity.uid} gid ${identity.gid} (what runs are on the host) cannot write (and search) ` +
        `${repo} (docs/admin-guide.md "Run identity")`,
    );
    expect(before.worstCase.hostIdentity).toBe(
      `host uid ${identity.uid} gid ${identity.gid} (uid 65534 inside): owns every file a run writes; ` +
        `setuid/setgid bits cleared at run end`,
    );
    const { outcome } = await dispatchAttack(h, 'nogrant');
    expect(outcome.status).toBe('failed');
    expect(outcome.reason).toContain(`mount repo (rw): host uid ${identity.uid} gid ${identity.gid}`);
    expect(outcome.reason).toContain(`cannot write (and search) ${repo}`);
    expect(existsSync(join(repo, 'x'))).toBe(false);
    // Granted by ACL-free group write instead of ownership: the kernel decides, so it runs.
    chownSync(repo, 0, identity.gid);
    chmodSync(repo, 0o775);
    expect(explain().worstCase.writable).toContain(
      `${repo} at ${join(h.dataDir, 'workspaces', '<runId>', 'in', 'mounts', 'repo')}`,
    );
    const again = await dispatchAttack(h, 'nogrant');
    expect(again.outcome.status, again.outcome.reason).toBe('completed');
    expect(again.results['write:in/mounts/repo/x']).toBe('ok');
    expect(statSync(join(repo, 'x')).uid).toBe(identity.uid);
  });

  it(
    'the clearing walk never follows links: a link to a host setuid file, a directory swapped for a link, a ' +
      'hard link it does not own',
    () => {
      const outside = mkdtempSync(join(tmpdir(), 'paddock-ident-outside-'));
      const hostBinary = join(outside, 'host-suid');
      copyFileSync('/usr/bin/id', hostBinary);
      chmodSync(hostBinary, 0o4755);
      const tree = mkdtempSync(join(tmpdir(), 'paddock-ident-tree-'));
      symlinkSync(hostBinary, join(tree, 'link-to-suid'));
      symlinkSync(outside, join(tree, 'dir-link'));
      mkdirSync(join(tree, 'd'));
      const own = join(tree, 'd', 'own');
      copyFileSync('/usr/bin/id', own);
      chownSync(own, identity.uid, identity.gid);
      chmodSync(own, 0o6755);
      const shared = join(tree, 'd', 'hard');
      linkSync(hostBinary, shared); // root's, two links: could be a host binary
      const findings = clearSetIdBits(tree, identity);
      expect(statSync(hostBinary).mode & 0o7777).toBe(0o4755);
      expect(statSync(own).mode & 0o7777).toBe(0o755);
      expect(findings).toHaveLength(2);
      expect(findings).toContainEqual({
        path: shared,
        cleared: false,
        mode: '4755',
        why: '2 hard links, owned by 0:0: may be a host file',
      });
      expect(findings).toContainEqual({ path: own, cleared: true, mode: '6755' });
    },
  );

  it(
    'a run the host never saw end (host crash) has its bits cleared at the next host start: its session folder, ' +
      'workspace and every rw mount',
    async () => {
      const { root, repo } = grantedRoot();
      const h = tempHost({ mountRoots: [root] });
      hosts.push(h);
      h.apply({
        resources: {
          mounts: [
            { id: 'repo', path: repo, mode: 'rw' },
            { id: 'ro', path: root, mode: 'ro' },
          ],
        },
        bindings: [],
      });
      const sessionId = 'ses_00000000-0000-4000-8000-000000000000';
      const runId = 'run_interrupted-0001';
      const plant = (path: string) => {
        mkdirSync(join(path, '..'), { recursive: true });
        copyFileSync('/usr/bin/id', path);
        chownSync(path, identity.uid, identity.gid);
        chmodSync(path, 0o4755);
        return path;
      };
      const planted = [
        plant(join(repo, 'left')),
        plant(join(h.dataDir, 'sessions', sessionId, 'left')),
        plant(join(h.dataDir, 'workspaces', runId, 'out', 'left')),
      ];
      const untouched = plant(join(root, 'not-rw', 'left')); // only in a read-only mount: no run could write there
      const audited: unknown[][] = [];
      clearInterruptedSetIdBits(
        h.dataDir,
        {
          interruptedRuns: [{ runId, sessionId, killedPid: null }],
          effects: [],
          pausedSessions: [],
          resumedSessions: [],
        },
        new ConfigRepo(h.store),
        (files) => audited.push(files),
      );
      for (const path of planted) expect(statSync(path).mode & 0o7777, path).toBe(0o755);
      expect(statSync(untouched).mode & 0o7777).toBe(0o4755);
      expect(audited).toHaveLength(1);
      expect((audited[0] as { path: string }[]).map((f) => f.path).sort()).toEqual([...planted].sort());
    },
  );

  it(
    'the clearing walk reaches a file 600 folders deep beside 3000 sibling folders (it holds only the current ' +
      'path open)',
    () => {
      const tree = mkdtempSync(join(tmpdir(), 'paddock-ident-deep-'));
      for (let i = 0; i < 3000; i++) mkdirSync(join(tree, `s${i}`));
      let deep = tree;
      for (let i = 0; i < 600; i++) {
        deep = join(deep, 'd');
        mkdirSync(deep);
      }
      const file = join(deep, 'suid');
      copyFileSync('/usr/bin/id', file);
      chownSync(file, identity.uid, identity.gid);
      chmodSync(file, 0o4755);
      const findings = clearSetIdBits(tree, identity);
      expect(findings).toEqual([{ path: file, cleared: true, mode: '4755' }]);
      expect(statSync(file).mode & 0o7777).toBe(0o755);
    },
  );

  // Three real CLI starts: slow on a loaded machine, hence the longer timeout.
  it('doctor reports the mapping and warns when it is privileged (real CLI output)', { timeout: 180_000 }, () => {
    const doctor = (env: Record<string, string>, flags: string[], asNobody = false) => {
      const data = mkdtempSync(join(tmpdir(), 'paddock-ident-doctor-'));
      chmodSync(data, 0o777);
      const command = [process.execPath, repoPath('bin/paddock.js'), 'doctor', ...flags, '--data-dir', data];
      // An unprivileged user that can reach the package: the run uid, which set-up lets search the folders above it.
      const [file, ...args] = asNobody
        ? [
            '/usr/bin/setpriv',
            '--reuid',
            String(identity.uid),
            '--regid',
            String(identity.gid),
            '--clear-groups',
            '--',
            ...command,
          ]
        : command;
      return execFileSync(file!, args, { encoding: 'utf8', env: { PATH: process.env.PATH!, ...env } });
    };
    const plain = doctor({}, []);
    expect(plain).toContain(
      `run identity:      yes uid/gid 65534 in the sandbox is host uid ${identity.uid} gid ${identity.gid} ` +
        `(dedicated: a user namespace paddock makes`,
    );
    expect(plain).not.toContain('WARNING');
    // the bwrap report says it too
    expect(plain).toContain(`uid/gid 65534 inside, which is host uid ${identity.uid} gid ${identity.gid} outside`);

    const adm = doctor({ PADDOCK_RUN_GID: '4' }, []); // "adm" on Debian
    expect(adm).toContain(`run identity:      NO  uid/gid 65534 in the sandbox is host uid ${identity.uid} gid 4`);
    expect(adm).toContain('  WARNING: runs get a privileged host identity: runs map to host gid 4, the "adm" group');
    expect(adm).toContain('NOT enforced: an unprivileged host identity: runs map to host gid 4, the "adm" group');

    // paddock run unprivileged: bwrap's own mapping to that user, no warning.
    const nobody = JSON.parse(doctor({}, ['--json'], true)) as {
      identity: { ok: boolean; warnings: string[]; identity?: RunIdentity };
      machine: { bwrap: { available: boolean; why?: string } };
    };
    expect(nobody.machine.bwrap.available, nobody.machine.bwrap.why).toBe(true);
    expect(nobody.identity).toMatchObject({
      ok: true,
      warnings: [],
      identity: { uid: identity.uid, gid: identity.gid, mechanism: 'invoking-user' },
    });
  });
});
