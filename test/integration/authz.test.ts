import { HARNESS_DIR } from '../../host/harness/harnesses.js';
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigRepo } from '../../host/bindings/configRepo.js';
import { explainBinding, type Explanation } from '../../host/bindings/explain.js';
import type { Binding } from '../../host/bindings/schema.js';
import { discoverRunners } from '../../host/plugins/catalog.js';
import type { RunOutcome } from '../../host/process/outcome.js';
import { ErrorCodes } from '../../sdk/protocol/errorCodes.js';
import { chatEvent, FIXTURE_RUNNERS, tempHost } from '../helpers/host.js';

import { tempHost as makeHost } from '../helpers/host.js';

type Verdict = 'ok' | { code: number; deniedBy?: string };
interface ProbeReport {
  probes: Record<string, Verdict>;
  burst: Verdict[];
  received: Record<string, unknown> & {
    hostRequests: string[];
    models: { id: string }[];
    knowledgeBases: { id: string }[];
    mcpServers: { id: string; allowedTools?: string[]; deniedTools: string[] }[];
  };
}

const resourcesDir = mkdtempSync(join(tmpdir(), 'paddock-resources-'));
mkdirSync(join(resourcesDir, 'skill-pdf'));
writeFileSync(join(resourcesDir, 'skill-pdf', 'SKILL.md'), '# pdf\n');
writeFileSync(join(resourcesDir, 'style.md'), 'be brief\n');

const PROBE_CONFIG = {
  models: ['m1', 'm2', 'ghost'],
  knowledgeBases: ['kb1', 'kb2'],
  tools: [
    ['gh', 'search'],
    ['gh', 'read'],
    ['gh', 'delete_repo'],
    ['files', 'list'],
    ['files', 'rm'],
    ['other', 'x'],
  ],
};

const CONFIG = {
  resources: {
    models: [
      { id: 'm1', provider: 'scripted', model: 'script-1' },
      { id: 'm2', provider: 'anthropic', model: 'claude', apiKey: { env: 'ANTHROPIC_API_KEY' } },
    ],
    knowledgeBases: [
      { id: 'kb1', name: 'Handbook', url: 'http://127.0.0.1:9/kb' },
      { id: 'kb2', url: 'http://127.0.0.1:9/kb' },
    ],
    mcpServers: [
      { id: 'gh', command: 'gh-mcp', tools: { allow: ['search', 'read'], deny: ['delete_repo'] } },
      { id: 'files', command: 'files-mcp', tools: { deny: ['rm'] } },
      { id: 'other', url: 'http://127.0.0.1:9/mcp' },
    ],
    skills: [{ id: 'pdf', name: 'pdf', path: join(resourcesDir, 'skill-pdf') }],
    artifacts: [{ id: 'style', name: 'style.md', path: join(resourcesDir, 'style.md') }],
  },
  bindings: [
    {
      id: 'probe',
      runner: 'tries-every-host-request',
      route: { platform: 'telegram', bot: 'probe-bot' },
      config: PROBE_CONFIG,
      grants: {
        state: 'session',
        models: ['m1'],
        knowledgeBases: ['kb1'],
        mcpServers: [{ id: 'gh', tools: ['search'] }, 'files'],
        skills: ['pdf'],
        artifacts: ['style'],
        fs: 'read',
      },
    },
    {
      id: 'bare',
      runner: 'tries-every-host-request',
      route: { platform: 'telegram', bot: 'bare-bot' },
      config: PROBE_CONFIG,
    },
    {
      id: 'limited',
      runner: 'tries-every-host-request',
      route: { platform: 'telegram', bot: 'limited-bot' },
      config: { burst: 40, bigRequestBytes: 5000 },
      grants: { state: 'session' },
      limits: { requestsPerSecond: 5, maxRequestBytes: 2000 },
    },
  ],
};

const host = tempHost();
beforeAll(() => host.apply(CONFIG));
afterAll(() => host.close());

async function probe(bot: string): Promise<{ outcome: RunOutcome; report: ProbeReport; runId: string }> {
  const ticket = await host.dispatcher.dispatch(chatEvent({ bot }));
  if (ticket.status === 'duplicate') throw new Error('unexpected duplicate');
  const outcome = await ticket.done;
  expect(outcome.status, outcome.reason).toBe('completed');
  const report = JSON.parse((outcome.result!.output!.parts[0] as { text: string }).text) as ProbeReport;
  return { outcome, report, runId: ticket.runId };
}

const allowed = (v: Verdict) =>
  v === 'ok' || (v.code !== ErrorCodes.PolicyDenied && v.code !== ErrorCodes.RunNotActive);

/** What explain says about one probe, computed only from the explanation. */
function predicted(e: Explanation, probeName: string): boolean {
  const p = e.access!;
  const [method, target] = probeName.split(':') as [string, string | undefined];
  if (!p.hostRequests.includes(method as never)) return false;
  if (method === 'model/complete') return p.models.some((m) => m.id === target);
  if (method === 'kb/retrieve') return p.knowledgeBases.some((k) => k.id === target);
  if (method === 'tool/call') {
    const [server, tool] = target!.split('/') as [string, string];
    const s = p.mcpServers.find((x) => x.id === server);
    return !!s && !s.deniedTools.includes(tool) && (s.allowedTools === undefined || s.allowedTools.includes(tool));
  }
  return true;
}

describe('grants are enforced on every runner request (real runner, real store)', () => {
  it(
    'a granted request passes authz; ungranted model, knowledge base, tool, method and state are denied with a ' +
      'code, a reason and an audit record',
    async () => {
      const { report, runId } = await probe('probe-bot');
      const p = report.probes;
      expect(p['state/get']).toBe('ok');
      expect(p['state/set']).toBe('ok');
      // Granted, so answered by the gateway: the scripted model replies; the knowledge base's
      // retriever (a closed port) fails upstream; the MCP servers (commands that do not exist)
      // answer with an error result. Each got past authz.
      expect(p['model/complete:m1']).toBe('ok');
      expect(p['kb/retrieve:kb1']).toEqual({ code: ErrorCodes.UpstreamFailed });
      for (const name of ['tool/call:gh/search', 'tool/call:files/list']) expect(p[name], name).toBe('ok');
      // fs/read is served (through the path policy): the file does not exist, an answer, not a refusal.
      expect(p['fs/read']).toEqual({ code: ErrorCodes.NotFound });
      const denied = (deniedBy: string) => ({ code: ErrorCodes.PolicyDenied, deniedBy });
      expect(p['fs/write']).toEqual(denied('binding.hostRequests'));
      expect(p['approval/request']).toEqual(denied('binding.hostRequests'));
      expect(p['model/complete:m2']).toEqual(denied('binding.models'));
      expect(p['model/complete:ghost']).toEqual(denied('binding.models'));
      expect(p['kb/retrieve:kb2']).toEqual(denied('binding.knowledgeBases'));
      expect(p['tool/call:gh/read']).toEqual(denied('binding.mcpServers.tools'));
      expect(p['tool/call:gh/delete_repo']).toEqual(denied('mcpServer.tools.deny'));
      expect(p['tool/call:files/rm']).toEqual(denied('mcpServer.tools.deny'));
      expect(p['tool/call:other/x']).toEqual(denied('binding.mcpServers'));

      const deniedNames = Object.entries(p)
        .filter(([, v]) => !allowed(v))
        .map(([k]) => k);
      const audit = host.store.audit.records().filter((r) => r.type === 'policy.denied' && r.runId === runId);
      expect(audit).toHaveLength(deniedNames.length);
      for (const record of audit) {
        const data = record.data as { code: number; deniedBy: string; reason: string; requestedBy: string };
        expect(data.code).toBe(ErrorCodes.PolicyDenied);
        expect(data.deniedBy).toMatch(/^(binding|mcpServer)\./);
        expect(data.reason.length).toBeGreaterThan(10);
        expect(data.requestedBy).toBe('runner:tries-every-host-request');
      }
    },
  );

  it(
    'the runner receives handles only: granted ids and names, workspace paths; no base URL, key reference or ' +
      'host path',
    async () => {
      const { report } = await probe('probe-bot');
      const r = report.received;
      expect(r.models).toEqual([{ id: 'm1', provider: 'scripted', model: 'script-1' }]);
      expect(r.knowledgeBases).toEqual([{ id: 'kb1', name: 'Handbook' }]);
      expect(r.mcpServers).toEqual([
        { id: 'gh', allowedTools: ['search'], deniedTools: ['delete_repo'] },
        { id: 'files', deniedTools: ['rm'] },
      ]);
      const workspace = r.workspace as { root: string };
      for (const list of [r.skills, r.artifacts] as { path: string }[][]) {
        expect(list).toHaveLength(1);
        expect(list[0]!.path.startsWith(`${workspace.root}/in/`)).toBe(true);
      }
      const text = JSON.stringify(r);
      expect(text).not.toContain('ANTHROPIC_API_KEY');
      expect(text).not.toContain('gh-mcp');
      expect(text).not.toContain('127.0.0.1:9');
      expect(text).not.toContain(resourcesDir);
      expect(r.stateScope).toBe('session');
    },
  );

  it('defaults grant nothing: a binding without grants gets no host request and no resource', async () => {
    const { report } = await probe('bare-bot');
    expect(report.received.hostRequests).toEqual([]);
    expect(report.received.models).toEqual([]);
    for (const [name, verdict] of Object.entries(report.probes)) expect(allowed(verdict), name).toBe(false);
  });

  it('explain says exactly what is enforced: its access is what the runner got, and predicts every probe', async () => {
    const repo = new ConfigRepo(host.store);
    for (const bot of ['probe-bot', 'bare-bot']) {
      const bindingId = bot === 'probe-bot' ? 'probe' : 'bare';
      const explanation = explainBinding(
        repo.binding(bindingId).spec as Binding,
        discoverRunners([FIXTURE_RUNNERS]),
        repo.snapshot().resources,
        host.config.limits,
        { dataDir: host.dataDir, harnessDir: HARNESS_DIR, mountRoots: host.config.mountRoots ?? [] },
      );
      const { report } = await probe(bot);
      const p = explanation.access!;
      expect(report.received.hostRequests).toEqual(p.hostRequests);
      expect(report.received.models).toEqual(p.models);
      expect(report.received.knowledgeBases).toEqual(p.knowledgeBases);
      expect(report.received.mcpServers).toEqual(p.mcpServers);
      for (const [name, verdict] of Object.entries(report.probes))
        expect(allowed(verdict), `${bindingId} ${name}`).toBe(predicted(explanation, name));
    }
  });

  it(
    'rate and size limits per run: a burst is refused with RateLimited and retryAfterMs, an oversized request ' +
      'with QuotaExceeded',
    async () => {
      const { report, runId } = await probe('limited-bot');
      expect(report.probes['state/set:big']).toEqual({
        code: ErrorCodes.QuotaExceeded,
        deniedBy: 'limits.maxRequestBytes',
      });
      const limited = report.burst.filter((v) => v !== 'ok' && v.code === ErrorCodes.RateLimited);
      const passed = report.burst.filter((v) => v === 'ok');
      // Capacity is 2 × 5 = 10 tokens, some already spent by the earlier probes; refill is 5/s.
      expect(passed.length).toBeGreaterThan(0);
      expect(passed.length).toBeLessThanOrEqual(20);
      expect(limited.length).toBeGreaterThanOrEqual(20);
      expect(limited.every((v) => v !== 'ok' && v.deniedBy === 'limits.requestsPerSecond')).toBe(true);
      const audit = host.store.audit
        .records()
        .filter(
          (r) =>
            r.type === 'policy.denied' &&
            r.runId === runId &&
            (r.data as { code: number }).code === ErrorCodes.RateLimited,
        );
      expect(audit).toHaveLength(limited.length);
    },
  );

  it(
    'requests before run, with a forged run id, and right after the result are refused RunNotActive; the own ' +
      'one passes',
    async () => {
      host.apply({
        bindings: [
          {
            id: 'oos',
            runner: 'requests-outside-its-run',
            route: { platform: 'telegram', bot: 'oos-bot' },
            grants: { state: 'session' },
          },
        ],
      });
      const ticket = await host.dispatcher.dispatch(chatEvent({ bot: 'oos-bot' }));
      if (ticket.status === 'duplicate') throw new Error('unexpected duplicate');
      const outcome = await ticket.done;
      expect(outcome.status, outcome.reason).toBe('completed');
      const answers = Object.fromEntries(
        outcome.stderrTail
          .trim()
          .split('\n')
          .map((l) => l.split('=') as [string, string]),
      );
      expect(answers).toEqual({
        before: String(ErrorCodes.RunNotActive),
        forged: String(ErrorCodes.RunNotActive),
        own: 'ok',
        after: String(ErrorCodes.RunNotActive),
      });
      const denials = host.store.audit.records().filter((r) => r.type === 'policy.denied' && r.runId === ticket.runId);
      expect(denials.map((r) => (r.data as { deniedBy: string }).deniedBy)).toEqual([
        'connection.activeRun',
        'connection.activeRun',
        'connection.activeRun',
      ]);
    },
  );
});

describe('granted folders reach the runner inside its workspace', () => {
  const root = mkdtempSync(join(tmpdir(), 'paddock-mountroot-'));
  chmodSync(root, 0o755); // readable by the run uid, like an admin's folder (docs/admin-guide.md "Run identity")
  mkdirSync(join(root, 'repo'));
  writeFileSync(join(root, 'repo', 'README.md'), 'hi\n');
  const mounted = makeHost({ mountRoots: [root] });
  afterAll(() => mounted.close());

  async function runProbe(h: ReturnType<typeof makeHost>, bot: string) {
    const ticket = await h.dispatcher.dispatch(chatEvent({ bot }));
    if (ticket.status === 'duplicate') throw new Error('duplicate');
    return ticket.done;
  }

  it(
    'copy mode copies a mount and a skill into in/; mount mode links the mount; a mount whose root was ' +
      'withdrawn fails the run before it starts',
    async () => {
      const binding = (id: string, workspace: string, sandbox: string) => ({
        id,
        runner: 'tries-every-host-request',
        sandbox,
        route: { platform: 'telegram', bot: id },
        workspace,
        grants: { mounts: ['repo'], skills: ['pdf'] },
      });
      mounted.apply({
        resources: {
          mounts: [{ id: 'repo', path: join(root, 'repo'), mode: 'ro' }],
          skills: [{ id: 'pdf', name: 'pdf', path: join(resourcesDir, 'skill-pdf') }],
        },
        // bwrap binds a mount into the workspace; the process backend can only link it.
        bindings: [
          binding('copier', 'copy', 'bwrap'),
          binding('binder', 'mount', 'bwrap'),
          binding('linker', 'mount', 'process'),
        ],
      });
      for (const bot of ['copier', 'binder', 'linker']) {
        const outcome = await runProbe(mounted, bot);
        expect(outcome.status, outcome.reason).toBe('completed');
        const report = JSON.parse((outcome.result!.output!.parts[0] as { text: string }).text) as ProbeReport;
        const received = report.received as unknown as {
          mounts: unknown[];
          workspace: { root: string };
          listings: Record<string, string[]>;
          links: Record<string, boolean>;
        };
        expect(received.mounts).toEqual([
          { id: 'repo', path: join(received.workspace.root, 'in/mounts/repo'), readOnly: true },
        ]);
        expect(received.listings).toEqual({ pdf: ['SKILL.md'], repo: ['README.md'] });
        expect(received.links).toEqual({ repo: bot === 'linker' });
        expect(existsSync(received.workspace.root)).toBe(false); // cleaned after the run
      }
      // Removing a workspace never follows the link into the mounted folder.
      expect(lstatSync(join(root, 'repo')).isDirectory()).toBe(true);
      expect(existsSync(join(root, 'repo', 'README.md'))).toBe(true);

      // The same data, served by a host whose configuration no longer allows that root.
      const withdrawn = makeHost({ dataDir: mounted.dataDir, mountRoots: [] });
      const outcome = await runProbe(withdrawn, 'copier');
      expect(outcome.status).toBe('failed');
      expect(outcome.reason).toMatch(/mount repo is no longer a directory under an allowed mount root/);
      await withdrawn.close();
      rmSync(join(root, 'repo'), { recursive: true });
    },
  );
});

describe('state scope comes from the binding, never from the runner', () => {
  const h = makeHost();
  afterAll(() => h.close());

  it(
    '"session" keeps state per conversation, "binding" shares it across conversations; no binding sees another ' +
      "one's state",
    async () => {
      h.apply({
        bindings: [
          {
            id: 'per-session',
            runner: 'increments-state-counter',
            route: { platform: 'telegram', bot: 'a' },
            grants: { state: 'session' },
          },
          {
            id: 'per-binding',
            runner: 'increments-state-counter',
            route: { platform: 'telegram', bot: 'b' },
            grants: { state: 'binding' },
          },
          {
            id: 'other-binding',
            runner: 'increments-state-counter',
            route: { platform: 'telegram', bot: 'c' },
            grants: { state: 'binding' },
          },
        ],
      });
      const count = async (bot: string, conversation: string) => {
        const ticket = await h.dispatcher.dispatch(chatEvent({ bot, conversation: { id: conversation } }));
        if (ticket.status === 'duplicate') throw new Error('duplicate');
        const outcome = await ticket.done;
        expect(outcome.status, outcome.reason).toBe('completed');
        return (outcome.result!.output!.parts[0] as { text: string }).text;
      };
      expect([await count('a', 'x'), await count('a', 'x'), await count('a', 'y')]).toEqual([
        'count: 1',
        'count: 2',
        'count: 1',
      ]);
      expect([await count('b', 'x'), await count('b', 'y')]).toEqual(['count: 1', 'count: 2']);
      expect([await count('c', 'x')]).toEqual(['count: 1']);
    },
  );
});

describe('fs requests go through the path policy', () => {
  const h = makeHost();
  afterAll(() => h.close());

  it(
    'a link the runner planted is never followed by the host; .git/hooks and ".." are refused; its own files ' + 'work',
    async () => {
      const secret = join(h.dataDir, 'paddock.db');
      h.apply({
        bindings: [
          {
            id: 'fs',
            runner: 'tries-every-host-request',
            route: { platform: 'telegram', bot: 'fs' },
            config: { symlinkTo: secret },
            grants: { fs: 'readwrite' },
          },
        ],
      });
      const ticket = await h.dispatcher.dispatch(chatEvent({ bot: 'fs' }));
      if (ticket.status === 'duplicate') throw new Error('duplicate');
      const outcome = await ticket.done;
      expect(outcome.status, outcome.reason).toBe('completed');
      const { probes } = JSON.parse((outcome.result!.output!.parts[0] as { text: string }).text) as ProbeReport;
      expect(probes['fs/read:leak']).toEqual({ code: ErrorCodes.PolicyDenied, deniedBy: 'pathPolicy.symlink' });
      expect(probes['fs/write:leak']).toEqual({ code: ErrorCodes.PolicyDenied, deniedBy: 'pathPolicy.symlink' });
      expect(probes['fs/write:hook']).toEqual({ code: ErrorCodes.PolicyDenied, deniedBy: 'pathPolicy.protected' });
      expect(probes['fs/read:dotdot']).toEqual({ code: ErrorCodes.PolicyDenied, deniedBy: 'pathPolicy.outside' });
      expect(probes['fs/write:own']).toBe('ok');
      expect(probes['fs/read:own']).toBe('ok');
      // under bwrap the run is an unprivileged uid: the host gives it what it wrote
      expect(probes['direct:own']).toBe('ok');
    },
  );
});

describe('a refusal by the service behind a request is recorded as denied and audited (issue 12, finding 8)', () => {
  const h = makeHost();
  afterAll(() => h.close());

  it(
    'path policy, state quota and model budget refusals: run.request denied with deniedBy and one policy.denied ' +
      'each; the accepted and not-found ones stay accepted; no stored byte holds the 5,000-character path',
    async () => {
      const secret = join(h.dataDir, 'paddock.db');
      h.apply({
        resources: { models: [{ id: 'm1', provider: 'scripted', model: 'script-1' }] },
        bindings: [
          {
            id: 'denials',
            runner: 'tries-every-host-request',
            route: { platform: 'telegram', bot: 'denials' },
            config: { symlinkTo: secret, models: ['m1'], maxTokens: 5_000 },
            grants: { fs: 'readwrite', state: 'session', models: ['m1'] },
            limits: { modelTokensPerRun: 100 },
          },
        ],
      });
      const ticket = await h.dispatcher.dispatch(chatEvent({ bot: 'denials' }));
      if (ticket.status === 'duplicate') throw new Error('duplicate');
      const outcome = await ticket.done;
      expect(outcome.status, outcome.reason).toBe('completed');
      const { probes } = JSON.parse((outcome.result!.output!.parts[0] as { text: string }).text) as ProbeReport;
      const denied = (deniedBy: string, code: number = ErrorCodes.PolicyDenied) => ({ code, deniedBy });
      const expected: Record<string, Verdict> = {
        'fs/read:leak': denied('pathPolicy.symlink'),
        'fs/write:leak': denied('pathPolicy.symlink'),
        'fs/write:hook': denied('pathPolicy.protected'),
        'fs/read:dotdot': denied('pathPolicy.outside'),
        'fs/write:long': denied('pathPolicy.invalid'),
        'fs/read:longName': denied('pathPolicy.invalid'),
        'fs/read:invalid': denied('pathPolicy.invalid'),
        'state/set:huge': denied('state.maxValueBytes', ErrorCodes.QuotaExceeded),
        'model/complete:m1': denied('binding.limits.modelTokensPerRun', ErrorCodes.QuotaExceeded),
        'approval/request': denied('binding.hostRequests'),
      };
      for (const [name, verdict] of Object.entries(expected)) expect(probes[name], name).toEqual(verdict);
      // Answers, not refusals: a missing file, and the run's own files.
      expect(probes['fs/read:missing']).toEqual({ code: ErrorCodes.NotFound });
      for (const name of ['fs/write:own', 'fs/read:own', 'state/get', 'state/set', 'fs/write'])
        expect(probes[name], name).toBe('ok');

      const events = h.store
        .readEvents(h.store.run(ticket.runId)!.sessionId)
        .filter((e) => e.runId === ticket.runId && e.type === 'run.request')
        .map((e) => e.data as { method: string; decision: 'accepted' | { code: number; reason: string } });
      const deniedEvents = events.filter((e) => e.decision !== 'accepted');
      const audit = h.store.audit.records().filter((r) => r.type === 'policy.denied' && r.runId === ticket.runId);
      const deniedBys = (audit.map((r) => (r.data as { deniedBy: string }).deniedBy) as string[]).sort();
      expect(deniedBys).toEqual(
        Object.values(expected)
          .map((v) => (v as { deniedBy: string }).deniedBy)
          .sort(),
      );
      expect(deniedEvents).toHaveLength(Object.keys(expected).length);
      // Accepted: state/get, state/set; fs/read of in/x and out/missing.txt (not found) and out/own.txt; fs/write of
      // out/x, out/own.txt and out/made/own2.txt.
      const accepted = events.filter((e) => e.decision === 'accepted').map((e) => e.method);
      expect(accepted.filter((m) => m === 'fs/read')).toHaveLength(3);
      expect(accepted.filter((m) => m === 'fs/write')).toHaveLength(3);
      expect(accepted.filter((m) => m.startsWith('state/'))).toHaveLength(2);
      for (const record of audit) {
        const data = record.data as { reason: string; requestedBy: string };
        expect(data.requestedBy).toBe('runner:tries-every-host-request');
        expect(data.reason.length).toBeLessThan(600);
      }
      // The 5,000-character path is clipped wherever it is echoed: in no stored event or audit record whole.
      const stored = JSON.stringify([
        h.store.readEvents(h.store.run(ticket.runId)!.sessionId),
        h.store.audit.records(),
      ]);
      expect(stored).not.toContain('p/'.repeat(200));
    },
  );
});
