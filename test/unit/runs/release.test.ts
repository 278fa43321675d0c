// Release hardening (docs/run-pipeline.md, "provision and release"; outside review of issue 12):
// a workspace that fails half-way through materializing is removed, release never follows a link
// out of the workspace, and an MCP upstream a run started dies with the run's release. Real store,
// real copies and links, real quota mounts, a real MCP server process (test/fixtures/mcp/server.mjs);
// the failures are fake steps appended after the real ones, or a grant's source removed after apply.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { pino } from 'pino';
import { RunJournal } from '../../../host/runs/journal.js';
import { PROVISION_STEPS, provision, type ProvisionStep } from '../../../host/runs/provision.js';
import { conversationKey } from '../../../host/runs/runService.js';
import { chatEvent, tempHost } from '../../helpers/host.js';
import { repoPath } from '../../helpers/fixtures.js';

const root = mkdtempSync(join(tmpdir(), 'paddock-release-root-'));
const repo = join(root, 'repo');
mkdirSync(repo);
writeFileSync(join(repo, 'keep.txt'), 'the host file\n');
writeFileSync(join(root, 'notes.txt'), 'an artifact\n');
const canary = mkdtempSync(join(tmpdir(), 'paddock-release-canary-'));
writeFileSync(join(canary, 'canary.txt'), 'must survive\n');

const host = tempHost({ mountRoots: [root] });
const log = pino({ level: 'silent' });
afterAll(() => host.close());

host.apply({
  resources: {
    artifacts: [{ id: 'notes', name: 'notes.txt', path: join(root, 'notes.txt') }],
    mounts: [{ id: 'repo', path: repo }],
    mcpServers: [{ id: 'tools', command: process.execPath, args: [repoPath('test/fixtures/mcp/server.mjs')] }],
  },
  bindings: [
    // Copies: the artifact first, then the mount (so a vanished mount fails half-way).
    {
      id: 'copies',
      runner: 'tries-every-host-request',
      route: { bot: 'copies' },
      grants: { artifacts: ['notes'], mounts: ['repo'] },
    },
    // The process backend links a `mount` grant into the workspace: release must remove the link, not its target.
    {
      id: 'links',
      runner: 'tries-every-host-request',
      route: { bot: 'links' },
      sandbox: 'process',
      workspace: 'mount',
      grants: { mounts: ['repo'] },
    },
    { id: 'tools', runner: 'calls-gateway', route: { bot: 'tools' }, grants: { mcpServers: ['tools'] } },
  ],
});

/** A queued run of `bot`'s binding, its journal and provisioning deps. */
function queuedRun(bot: string) {
  const event = chatEvent({ bot });
  const plan = host.runs.plan({ kind: 'dispatch', event: event as never, tenant: 'default' });
  const { sessionId } = host.store.ensureSession('default', plan.binding.id, conversationKey(event as never));
  const queued = host.runs.queue(plan, event as never, sessionId);
  const journal = new RunJournal(host.store, log, host.redactor).open(queued, plan.runner.manifest.id);
  const deps = { config: host.config, store: host.store, log, redactor: host.redactor, gateway: host.gateway };
  return { plan, queued, journal, deps };
}

const mountsUnder = (dir: string) =>
  readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .filter((point) => point.startsWith(dir));

/** Pids of live processes whose working folder is `dir`. */
function processesIn(dir: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        return (
          readlinkSync(`/proc/${pid}/cwd`) === dir && !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'))
        );
      } catch {
        return false; // gone, or not ours to read
      }
    })
    .map(Number);
}

describe('release: a half-built workspace is removed', () => {
  it('a grant that fails after earlier copies leaves no workspace folder, mount or copy behind', async () => {
    const { plan, queued, journal, deps } = queuedRun('copies');
    const wsRoot = join(host.dataDir, 'workspaces', queued.runId);
    // The mount's folder goes away after apply: the artifact is copied, then the mount fails.
    renameSync(repo, `${repo}.moved`);
    try {
      await expect(provision(deps, { queued, plan, journal })).rejects.toThrow(
        'mount repo is no longer a directory under an allowed mount root',
      );
    } finally {
      renameSync(`${repo}.moved`, repo);
    }
    expect(existsSync(wsRoot), 'the half-built workspace').toBe(false);
    expect(mountsUnder(host.dataDir), 'quota mounts').toEqual([]);
    expect(readFileSync(join(root, 'notes.txt'), 'utf8')).toBe('an artifact\n');
    const results = host.store
      .readEvents(queued.sessionId)
      .filter((e) => e.runId === queued.runId && e.type === 'effect.result')
      .map((e) => (e.data as { status: string }).status);
    expect(results).toEqual(['failed']);
  }, 60_000);
});

describe('release never follows a link out of the workspace', () => {
  it('links the runner planted (and a replaced folder) are removed, their targets are intact', async () => {
    const { plan, queued, journal, deps } = queuedRun('copies');
    let wsRoot = '';
    /** What a runner could leave: links to a folder outside, in every part of its workspace. */
    const plant: ProvisionStep = {
      name: 'fake-runner-links',
      run: (d) => {
        const ws = d.workspace!;
        wsRoot = ws.root;
        symlinkSync(canary, join(ws.out, 'escape'));
        symlinkSync(join(canary, 'canary.txt'), join(ws.in, 'file-link'));
        symlinkSync(canary, join(ws.root, 'top'));
        rmSync(ws.home, { recursive: true });
        symlinkSync(canary, ws.home); // a whole folder of the workspace replaced by a link
      },
    };
    const run = await provision(deps, { queued, plan, journal }, [...PROVISION_STEPS, plant]);
    expect(readdirSync(join(wsRoot, 'home'))).toContain('canary.txt'); // the link is live
    await run.release();
    expect(existsSync(wsRoot), 'the workspace').toBe(false);
    expect(readdirSync(canary)).toEqual(['canary.txt']);
    expect(readFileSync(join(canary, 'canary.txt'), 'utf8')).toBe('must survive\n');
  }, 60_000);

  it('a `mount` grant linked into the workspace (process backend): release removes the link only', async () => {
    const { plan, queued, journal, deps } = queuedRun('links');
    const run = await provision(deps, { queued, plan, journal });
    const link = join(run.workspace.in, 'mounts', 'repo');
    expect(readlinkSync(link)).toBe(repo);
    await run.release();
    expect(existsSync(run.workspace.root)).toBe(false);
    expect(readFileSync(join(repo, 'keep.txt'), 'utf8')).toBe('the host file\n');
  }, 60_000);
});

describe('an MCP upstream a run started ends with its release', () => {
  it('a provision step failing after the upstream process started leaves no process or folder', async () => {
    const { plan, queued, journal, deps } = queuedRun('tools');
    const workDir = join(host.dataDir, 'mcp', `${queued.runId}-tools`);
    let pids: number[] = [];
    /** A fake failure after the gateway step, once the upstream really runs (a runner's first tool use starts it). */
    const fails: ProvisionStep = {
      name: 'fake-failure',
      run: async (d) => {
        const tools = await d.gateway!.upstreams.listTools('tools');
        expect(tools.map((t) => t.name)).toContain('echo');
        pids = processesIn(workDir);
        throw new Error('fake failure after the upstream started');
      },
    };
    const gatewayAt = PROVISION_STEPS.findIndex((s) => s.name === 'gateway');
    await expect(
      provision(deps, { queued, plan, journal }, [...PROVISION_STEPS.slice(0, gatewayAt + 1), fails]),
    ).rejects.toThrow('fake failure after the upstream started');
    expect(pids.length, 'the upstream server process was running').toBeGreaterThan(0);
    expect(processesIn(workDir), 'upstream processes left').toEqual([]);
    expect(existsSync(workDir), "the upstream's folder").toBe(false);
  }, 60_000);

  it('an upstream whose start cannot be audited is stopped at once, not left running unseen', async () => {
    const { plan, queued, journal, deps } = queuedRun('tools');
    const workDir = join(host.dataDir, 'mcp', `${queued.runId}-tools`);
    const append = host.store.audit.append.bind(host.store.audit);
    // A fake of a store that fails at exactly this write (a real one cannot be made to on demand).
    const spy = vi.spyOn(host.store.audit, 'append').mockImplementation((entry, at) => {
      if (entry.type === 'mcp.connected') throw new Error('fake: the audit write failed');
      return append(entry, at);
    });
    let pids: number[] = [];
    const tries: ProvisionStep = {
      name: 'fake-first-use',
      run: async (d) => {
        await expect(d.gateway!.upstreams.listTools('tools')).rejects.toThrow('fake: the audit write failed');
        // Before release: the upstreams no longer know a connection that failed, so release would not stop it.
        pids = processesIn(workDir);
        throw new Error('fake failure after the first use');
      },
    };
    const gatewayAt = PROVISION_STEPS.findIndex((s) => s.name === 'gateway');
    try {
      await expect(
        provision(deps, { queued, plan, journal }, [...PROVISION_STEPS.slice(0, gatewayAt + 1), tries]),
      ).rejects.toThrow('fake failure after the first use');
      expect(pids, 'upstream processes left once its start failed').toEqual([]);
      expect(processesIn(workDir)).toEqual([]);
    } finally {
      spy.mockRestore();
      // A leak must not outlive the test.
      for (const pid of [...pids, ...processesIn(workDir)]) process.kill(pid, 'SIGKILL');
    }
  }, 60_000);
});
