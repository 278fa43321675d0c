import {
  chmodSync,
  chownSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
  existsSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { RunOutcome } from '../../host/process/outcome.js';
import { probeMachine } from '../../host/sandbox/probe.js';
import { textEvent } from '../../sdk/protocol/runParams.js';
import { tempHost } from '../helpers/host.js';

// These tests need bubblewrap, prlimit and writable cgroups (scripts/setup.sh installs bwrap).
// They fail loudly, naming what is missing, rather than skipping.
const machine = probeMachine();

/** Pids of live processes whose command line contains `needle`. */
function processesWith(needle: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z') continue;
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').includes(needle))
        found.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

const LIMITS = { memoryBytes: 256 * 1024 * 1024, pids: 32, cpuSeconds: 2, wallClockMs: 30_000 };
const host = tempHost({ limits: LIMITS });
// The memory hog's own host: reclaim near a memory limit is charged to the process as system CPU time, and on a
// loaded machine it once reached the 2 s CPU-time limit first (SIGKILL, exit 137, no OOM kill counted). Here the
// memory limit is the only one the hog can reach.
const hogHost = tempHost({ limits: { ...LIMITS, cpuSeconds: 60 } });
afterAll(() => Promise.all([host.close(), hogHost.close()]));

async function attack(
  actions: string[],
  sandbox: 'bwrap' | 'process' = 'bwrap',
  on = host,
): Promise<{ outcome: RunOutcome; results: Record<string, string> }> {
  const outcome = await on.runs.runAdHoc({
    runner: 'tries-sandbox-escapes',
    event: textEvent('attack'),
    config: { actions },
    sandbox,
  });
  const text = (outcome.result?.output?.parts[0] as { text?: string } | undefined)?.text;
  return { outcome, results: text ? (JSON.parse(text) as Record<string, string>) : {} };
}

describe('bwrap backend (real sandbox, hostile runner)', () => {
  it('this machine can run the sandbox (else: apt-get install bubblewrap, run as root for cgroups)', () => {
    expect(machine.bwrap, machine.bwrap.why).toMatchObject({ available: true });
    expect(machine.cgroups.memory, machine.cgroups.why).toBeTruthy();
    expect(machine.cgroups.pids).toBeTruthy();
    expect(machine.prlimit.available).toBe(true);
  });

  it(
    'host files are invisible and read-only: /etc/shadow, ~/.ssh, the data dir, other workspaces, host temp ' +
      'files; writes stay in the workspace; remount fails',
    async () => {
      const outside = mkdtempSync(join(tmpdir(), 'paddock-outside-'));
      writeFileSync(join(outside, 'secret.txt'), 'TOP-SECRET');
      const ssh = join(homedir(), '.ssh');
      mkdirSync(ssh, { recursive: true, mode: 0o700 });
      const sshCanary = join(ssh, `paddock-canary-${process.pid}`);
      writeFileSync(sshCanary, 'ssh-canary');
      const otherRun = join(host.dataDir, 'workspaces', 'run_other-workspace-0000');
      mkdirSync(otherRun, { recursive: true });
      writeFileSync(join(otherRun, 'notes.txt'), 'other run');
      try {
        const { outcome, results } = await attack([
          'read:/etc/shadow',
          `read:${sshCanary}`,
          `read:${join(host.dataDir, 'paddock.db')}`,
          `read:${join(host.dataDir, 'keys', 'audit-ed25519.pem')}`,
          `read:${join(otherRun, 'notes.txt')}`,
          `read:${join(outside, 'secret.txt')}`,
          `write:${join(outside, 'secret.txt')}`,
          'write:/usr/pwned',
          'write:/etc/pwned',
          'write:out/result.txt',
          'remount:/usr',
          'remount:/',
        ]);
        expect(outcome.status, outcome.reason).toBe('completed');
        for (const path of [
          '/etc/shadow',
          sshCanary,
          join(host.dataDir, 'paddock.db'),
          join(host.dataDir, 'keys', 'audit-ed25519.pem'),
          join(otherRun, 'notes.txt'),
          join(outside, 'secret.txt'),
        ]) {
          expect(results[`read:${path}`], path).toBe('ENOENT');
        }
        expect(results[`write:${join(outside, 'secret.txt')}`]).toMatch(/ENOENT|EROFS/);
        expect(results['write:/usr/pwned']).toBe('EROFS');
        expect(results['write:/etc/pwned']).toMatch(/EROFS|EACCES/);
        expect(existsSync('/etc/pwned')).toBe(false);
        expect(results['write:out/result.txt']).toBe('ok');
        expect(results['remount:/usr']).not.toBe('ok');
        expect(results['remount:/']).not.toBe('ok');
        expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('TOP-SECRET');
        expect(existsSync('/usr/pwned')).toBe(false);
      } finally {
        rmSync(outside, { recursive: true, force: true });
        rmSync(sshCanary, { force: true });
      }
    },
  );

  it('no network: a server on the host loopback is unreachable', async () => {
    const server = createServer((s) => s.on('error', () => undefined).end('hello')).listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const port = (server.address() as { port: number }).port;
    try {
      const { results } = await attack([`connect:${port}`]);
      expect(results[`connect:${port}`]).toBe('ECONNREFUSED');
      const direct = await attack([`connect:${port}`], 'process');
      expect(direct.results[`connect:${port}`]).toBe('ok'); // the same runner reaches it without the sandbox
    } finally {
      server.close();
    }
  });

  it(
    'egress only through the host proxy: an allowlisted loopback server is reachable, anything else is refused ' +
      'and audited',
    async () => {
      const { createServer: createHttp } = await import('node:http');
      const web = createHttp((_req, res) => res.end('hello-egress')).listen(0, '127.0.0.1');
      await new Promise((r) => web.once('listening', r));
      const port = (web.address() as { port: number }).port;
      const url = `http://127.0.0.1:${port}/`;
      const actions = [`proxy-get:${url}`, `proxy-connect:127.0.0.1:${port}`, `connect:${port}`];
      const binding = (id: string, network: object) => ({
        id,
        runner: 'tries-sandbox-escapes',
        route: { platform: 'net', bot: id },
        config: { actions },
        network,
      });
      host.apply({
        bindings: [
          binding('open', { egress: [`127.0.0.1:${port}`], allowPrivate: true }),
          binding('elsewhere', { egress: ['example.com'] }),
          binding('public-only', { egress: [`127.0.0.1:${port}`] }),
        ],
      });
      try {
        const results: Record<string, Record<string, string>> = {};
        const runIds: Record<string, string> = {};
        for (const bot of ['open', 'elsewhere', 'public-only']) {
          const { chatEvent } = await import('../helpers/host.js');
          const ticket = await host.dispatcher.dispatch(chatEvent({ platform: 'net', bot }));
          if (ticket.status === 'duplicate') throw new Error('duplicate');
          const outcome = await ticket.done;
          expect(outcome.status, outcome.reason).toBe('completed');
          results[bot] = JSON.parse((outcome.result!.output!.parts[0] as { text: string }).text) as Record<
            string,
            string
          >;
          runIds[bot] = ticket.runId;
        }
        expect(results.open![`proxy-get:${url}`]).toBe('200 hello-egress');
        expect(results.open![`proxy-connect:127.0.0.1:${port}`]).toBe('200');
        expect(results.open![`connect:${port}`]).toBe('ECONNREFUSED'); // the proxy is the only door
        expect(results.elsewhere![`proxy-get:${url}`]).toMatch(
          new RegExp(
            `^403 paddock egress: network domain "127\\.0\\.0\\.1:${port}": deny by the host's default ` +
              '\\(destination not in network\\.egress; approvalPolicy is deny',
          ),
        );
        expect(results.elsewhere![`proxy-connect:127.0.0.1:${port}`]).toBe('403');
        expect(results['public-only']![`proxy-get:${url}`]).toMatch(
          /^403 paddock egress: resolves to a private or loopback address/,
        );
        const audit = (bot: string) =>
          host.store.audit.records({ runId: runIds[bot] }).filter((r) => r.type.startsWith('egress.'));
        expect(audit('open').map((r) => r.type)).toEqual(['egress.allowed', 'egress.allowed']);
        expect(audit('elsewhere').map((r) => r.type)).toEqual(['egress.denied', 'egress.denied']);
        expect(audit('elsewhere')[0]!.data).toMatchObject({
          host: '127.0.0.1',
          port,
          allowed: false,
          deniedBy: 'host default',
        });
      } finally {
        web.close();
      }
    },
  );

  it('a read-write mount is writable, except its .git/hooks and .git/config', async () => {
    const root = mkdtempSync(join(tmpdir(), 'paddock-repos-'));
    mkdirSync(join(root, 'repo', '.git', 'hooks'), { recursive: true });
    writeFileSync(join(root, 'repo', '.git', 'config'), '[core]\n');
    // Granted to the run identity, as docs/admin-guide.md "Run identity" says.
    const ids = machine.identity as { uid: number; gid: number };
    chmodSync(root, 0o755);
    chownSync(join(root, 'repo'), ids.uid, ids.gid);
    const h = tempHost({ mountRoots: [root] });
    try {
      const actions = [
        'write:in/mounts/repo/src.txt',
        'write:in/mounts/repo/.git/hooks/pre-commit',
        'write:in/mounts/repo/.git/config',
      ];
      h.apply({
        resources: { mounts: [{ id: 'repo', path: join(root, 'repo'), mode: 'rw' }] },
        bindings: [
          {
            id: 'dev',
            runner: 'tries-sandbox-escapes',
            route: { platform: 'git', bot: 'dev' },
            workspace: 'mount',
            grants: { mounts: ['repo'] },
            config: { actions },
          },
        ],
      });
      const { chatEvent } = await import('../helpers/host.js');
      const ticket = await h.dispatcher.dispatch(chatEvent({ platform: 'git', bot: 'dev' }));
      if (ticket.status === 'duplicate') throw new Error('duplicate');
      const outcome = await ticket.done;
      expect(outcome.status, outcome.reason).toBe('completed');
      const results = JSON.parse((outcome.result!.output!.parts[0] as { text: string }).text) as Record<string, string>;
      expect(results['write:in/mounts/repo/src.txt']).toBe('ok');
      expect(results['write:in/mounts/repo/.git/hooks/pre-commit']).toBe('EROFS');
      expect(results['write:in/mounts/repo/.git/config']).toBe('EROFS');
      // the write landed in the real folder
      expect(readFileSync(join(root, 'repo', 'src.txt'), 'utf8')).toBe('pwned\n');
      expect(existsSync(join(root, 'repo', '.git', 'hooks', 'pre-commit'))).toBe(false);
      expect(readFileSync(join(root, 'repo', '.git', 'config'), 'utf8')).toBe('[core]\n');
    } finally {
      await h.close();
    }
  });

  it('a fork bomb is held by the pids limit and the run goes on', async () => {
    const { outcome, results } = await attack(['forks:100']);
    expect(outcome.status, outcome.reason).toBe('completed');
    const started = Number(results['forks:100']!.split(' ')[1]);
    expect(started).toBeGreaterThan(0);
    expect(started).toBeLessThan(32);
    expect(outcome.reason).toMatch(/pids limit refused \d+ process/);
  });

  it('a memory hog is killed by the memory limit; nothing of the run is left', async () => {
    const { outcome } = await attack(['hog:1024'], 'bwrap', hogHost);
    expect(outcome.status).toBe('crashed');
    expect(outcome.reason).toMatch(/memory limit/);
    expect(outcome.survivors).toEqual([]);
  });

  it('a CPU spinner is stopped by the CPU-time limit', async () => {
    const started = performance.now();
    const { outcome } = await attack(['spin:30']);
    expect(outcome.status).toBe('crashed');
    expect(performance.now() - started).toBeLessThan(20_000);
  });

  it('file size and open files are capped per process (prlimit)', async () => {
    const small = tempHost({ limits: { fileSizeBytes: 1024 * 1024, openFiles: 256 } });
    try {
      const files = await small.runs.runAdHoc({
        runner: 'tries-sandbox-escapes',
        event: textEvent('x'),
        config: { actions: ['openfiles:2000'] },
        sandbox: 'bwrap',
      });
      const results = JSON.parse((files.result!.output!.parts[0] as { text: string }).text) as Record<string, string>;
      expect(results['openfiles:2000']).toMatch(/^EMFILE after \d+$/);
      expect(Number(results['openfiles:2000']!.split(' ').pop())).toBeLessThan(256);
      // Past RLIMIT_FSIZE the write fails (node ignores SIGXFSZ, so it sees EFBIG).
      const big = await small.runs.runAdHoc({
        runner: 'tries-sandbox-escapes',
        event: textEvent('x'),
        config: { actions: ['bigfile:4'] },
        sandbox: 'bwrap',
      });
      expect(big.status, big.reason).toBe('completed');
      expect(JSON.parse((big.result!.output!.parts[0] as { text: string }).text)).toEqual({ 'bigfile:4': 'EFBIG' });
    } finally {
      await small.close();
    }
  });

  it('a setsid escapee dies with the run (pid namespace and cgroup kill)', async () => {
    const marker = `${4000 + (process.pid % 1000)}.${Date.now() % 100000}`;
    const { outcome, results } = await attack([`setsid:${marker}`]);
    expect(outcome.status, outcome.reason).toBe('completed');
    expect(results[`setsid:${marker}`]).toBe('ok');
    expect(processesWith(`sleep ${marker}`)).toEqual([]);
  });

  it('the same escapee also dies under the process backend, through the run cgroup', async () => {
    const marker = `${5000 + (process.pid % 1000)}.${Date.now() % 100000}`;
    const { outcome } = await attack([`setsid:${marker}`], 'process');
    expect(outcome.status, outcome.reason).toBe('completed');
    expect(processesWith(`sleep ${marker}`)).toEqual([]);
  });

  it('the runner environment holds no host secret', async () => {
    process.env.PADDOCK_TEST_CANARY_TOKEN = 'canary-env-9f8e7d6c5b4a';
    try {
      const { results } = await attack(['env']);
      expect(results.env).not.toContain('canary-env-9f8e7d6c5b4a');
      expect(results.env).not.toContain('PADDOCK_TEST_CANARY_TOKEN');
    } finally {
      delete process.env.PADDOCK_TEST_CANARY_TOKEN;
    }
  });
});
