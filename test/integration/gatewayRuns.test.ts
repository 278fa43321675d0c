// The gateway as real runs use it: a runner inside the bwrap sandbox calls the model over HTTP
// (through the bridged socket) and through the SDK, retrieves from an FTS5 knowledge base, calls
// tools of a real MCP server (official SDK, started under the sandbox), and finds its skill
// read-only. The MCP endpoint is also driven directly with the official MCP client.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpServerResourceSchema } from '../../host/bindings/schema.js';
import { readSkill } from '../../host/bindings/skillDigest.js';
import type { RunOutcome } from '../../host/process/outcome.js';
import { ErrorCodes } from '../../sdk/protocol/errorCodes.js';
import type { Update } from '../../sdk/protocol/types.js';
import { repoPath } from '../helpers/fixtures.js';
import { openGatewayRun } from '../helpers/gatewayRun.js';
import { processesWith } from '../helpers/procs.js';
import { chatEvent, tempHost } from '../helpers/host.js';
import { rawDb } from '../helpers/rawDb.js';

const MCP_SERVER = repoPath('test/fixtures/mcp/server.mjs');
const MCP_CANARY = `mcp-canary-${process.pid}-Zq8vWm3kT1`;
process.env.PADDOCK_TEST_MCP_CANARY_TOKEN = MCP_CANARY;

const root = mkdtempSync(join(tmpdir(), 'paddock-gwruns-'));
const kbDir = join(root, 'handbook');
const otherKbDir = join(root, 'secret-kb');
const skillDir = join(root, 'greeter');
for (const d of [kbDir, otherKbDir, skillDir]) mkdirSync(d);
writeFileSync(
  join(kbDir, 'refunds.md'),
  '# Refund policy\n\nCustomers may return any item within 30 days for a full refund.\n',
);
writeFileSync(join(kbDir, 'shipping.md'), '# Shipping\n\nParcels leave the warehouse every weekday at noon.\n');
writeFileSync(join(kbDir, 'notes.txt'), 'Office plants are watered on Fridays.\n');
writeFileSync(join(otherKbDir, 'salaries.md'), '# Salaries\n\nConfidential.\n');
writeFileSync(
  join(skillDir, 'SKILL.md'),
  '---\nname: greeter\ndescription: Greets people\nversion: 1.2.0\n---\nSay hello warmly.\n',
);

const host = tempHost({ limits: { wallClockMs: 60_000 } });
afterAll(() => host.close());

const resources = {
  models: [{ id: 'sm', provider: 'scripted', model: 'scripted-1' }],
  knowledgeBases: [
    { id: 'handbook', path: kbDir },
    { id: 'secret-kb', path: otherKbDir },
  ],
  mcpServers: [
    {
      id: 'tools',
      command: process.execPath,
      args: [MCP_SERVER],
      env: { MCP_CANARY: { env: 'PADDOCK_TEST_MCP_CANARY_TOKEN' } },
      timeoutMs: 1500,
      tools: { deny: ['delete_everything'] },
    },
  ],
  skills: [{ id: 'greeter', name: 'greeter', path: skillDir }],
};

async function dispatch(bot: string): Promise<{
  outcome: RunOutcome;
  report: {
    gateway: { baseUrl: string; mcp: Record<string, string> } | null;
    skills: { id: string; digest?: string; changed?: boolean; version?: string }[];
    report: Record<string, unknown>[];
  };
  updates: Update[];
}> {
  const updates: Update[] = [];
  const ticket = await host.dispatcher.dispatch(chatEvent({ bot }), { onUpdate: (u) => updates.push(u) });
  if (ticket.status === 'duplicate') throw new Error('duplicate');
  const outcome = await ticket.done;
  const text = (outcome.result?.output?.parts[0] as { text?: string } | undefined)?.text;
  return {
    outcome,
    report: text
      ? (JSON.parse(text) as Awaited<ReturnType<typeof dispatch>>['report'])
      : { gateway: null, skills: [], report: [] },
    updates,
  };
}

const auditOf = (type: string, runId?: string) =>
  (
    rawDb(host.store).prepare('SELECT data, run_id AS runId FROM audit WHERE type = ? ORDER BY seq').all(type) as {
      data: string;
      runId: string | null;
    }[]
  )
    .filter((r) => !runId || r.runId === runId)
    .map((r) => JSON.parse(r.data) as Record<string, unknown>);

describe('a sandboxed run uses models, knowledge, tools and skills only through the host', () => {
  let outcome: RunOutcome;
  let report: Awaited<ReturnType<typeof dispatch>>['report'];
  beforeAll(async () => {
    host.apply({
      resources,
      bindings: [
        {
          id: 'gw-bwrap',
          runner: 'calls-gateway',
          route: { bot: 'gw' },
          sandbox: 'bwrap',
          grants: { models: ['sm'], knowledgeBases: ['handbook'], mcpServers: ['tools'], skills: ['greeter'] },
          config: {
            steps: [
              {
                do: 'http',
                path: '/v1/messages',
                body: {
                  model: 'sm',
                  max_tokens: 50,
                  stream: true,
                  messages: [{ role: 'user', content: 'SAY:inside the sandbox' }],
                },
              },
              { do: 'complete', model: 'sm', text: 'LONG:40' },
              { do: 'kb', knowledgeBase: 'handbook', query: 'how do refunds work?' },
              { do: 'kb', knowledgeBase: 'secret-kb', query: 'salaries' },
              { do: 'tool', server: 'tools', tool: 'echo', arguments: { text: 'hi' } },
              { do: 'tool', server: 'tools', tool: 'delete_everything' },
              { do: 'tool', server: 'tools', tool: 'hang' },
              { do: 'tool', server: 'tools', tool: 'secret' },
              { do: 'tool', server: 'tools', tool: 'where', arguments: { path: join(host.dataDir, 'paddock.db') } },
              { do: 'writeSkill' },
            ],
          },
        },
      ],
    });
    ({ outcome, report } = await dispatch('gw'));
  }, 60_000);

  it('the run completes, with the gateway reachable inside the sandbox at the bridged loopback port', () => {
    expect(outcome.status, outcome.reason).toBe('completed');
    expect(report.gateway).toMatchObject({
      baseUrl: 'http://127.0.0.1:3129',
      mcp: { tools: 'http://127.0.0.1:3129/mcp/tools' },
    });
    const http = report.report[0] as { status: number; text: string };
    expect(http.status).toBe(200);
    expect(http.text).toContain('inside the sandbox');
  });

  it('model/complete streams deltas and answers the normalized result, labelled scripted', () => {
    const step = report.report[1] as {
      result: {
        message: { content: { type: string; text: string }[] };
        model: string;
        scripted?: boolean;
        usage: { inputTokens: number };
      };
      deltas: string[];
    };
    const text = `${Array.from({ length: 40 }, (_, i) => `chunk ${i + 1}`).join(' ')}.`;
    expect(step.result.message.content[0]!.text).toBe(text);
    expect(step.deltas.join('')).toBe(text);
    // Streamed, less the last characters the redactor holds back until the answer ends.
    expect(step.deltas.length).toBeGreaterThan(1);
    expect(step.result).toMatchObject({ model: 'sm', scripted: true });
    expect(step.result.usage.inputTokens).toBeGreaterThan(0);
    const calls = auditOf('gateway.call', outcome.runId);
    expect(calls.map((c) => c.endpoint)).toEqual(['anthropic', 'model/complete']);
    expect(calls.every((c) => c.scripted === true)).toBe(true);
  });

  it('kb/retrieve answers from the FTS5 folder with source references; an ungranted knowledge base is refused', () => {
    const kb = report.report[2] as { chunks: { text: string; source: { id: string; title: string; uri: string } }[] };
    expect(kb.chunks[0]).toMatchObject({ source: { id: 'refunds.md#0', title: 'Refund policy', uri: 'refunds.md' } });
    expect(kb.chunks[0]!.text).toContain('30 days');
    expect(kb.chunks.map((c) => c.source.uri)).not.toContain('notes.txt');
    expect(report.report[3]).toMatchObject({
      error: { code: ErrorCodes.PolicyDenied, data: { deniedBy: 'binding.knowledgeBases' } },
    });
    expect(auditOf('kb.retrieve', outcome.runId)).toEqual([
      expect.objectContaining({
        knowledgeBase: 'handbook',
        kind: 'folder',
        sources: kb.chunks.map((c) => c.source.id),
      }),
    ]);
  });

  it(
    'MCP tools: an allowed tool works, a denied one is refused, a hung one times out, output is redacted; all ' +
      'audited',
    () => {
      expect(report.report[4]).toMatchObject({ content: [{ type: 'text', text: 'echo: hi' }], isError: false });
      expect(report.report[5]).toMatchObject({
        error: { code: ErrorCodes.PolicyDenied, data: { deniedBy: 'mcpServer.tools.deny' } },
      });
      expect(report.report[6]).toMatchObject({
        isError: true,
        content: [{ text: expect.stringContaining('timed out after 1500 ms') }],
      });
      const secret = JSON.stringify(report.report[7]);
      expect(secret).not.toContain(MCP_CANARY);
      expect(secret).toContain('[REDACTED]');
      const calls = auditOf('mcp.call', outcome.runId);
      expect(calls.map((c) => [c.tool, c.outcome])).toEqual([
        ['echo', 'ok'],
        ['hang', 'timeout'],
        ['secret', 'ok'],
        ['where', 'ok'],
      ]);
    },
  );

  it(
    "the stdio MCP server ran under the run's bwrap sandbox (no view of the host database, no host env) and is " +
      'gone after the run',
    () => {
      const where = JSON.parse((report.report[8] as { content: { text: string }[] }).content[0]!.text) as {
        uid: number;
        exists: boolean;
        env: string[];
      };
      expect(where.exists).toBe(false);
      expect(where.uid).toBe(65534);
      // What the host gave it (PWD is the shell's own), nothing inherited.
      expect(where.env).toEqual(['HOME', 'LANG', 'MCP_CANARY', 'PATH', 'PWD', 'TMPDIR']);
      expect(auditOf('mcp.connected', outcome.runId)).toEqual([
        expect.objectContaining({ server: 'tools', transport: 'stdio', backend: 'bwrap' }),
      ]);
      expect(processesWith(MCP_SERVER)).toEqual([]);
    },
  );

  it(
    'the skill is projected read-only (a write from inside the sandbox fails) and its digest is in the audit ' + 'log',
    () => {
      expect(report.report[9]).toMatchObject({ error: { message: expect.stringMatching(/EROFS|read-only/) } });
      const digest = readSkill(skillDir, 'greeter').digest;
      expect(report.skills[0]).toMatchObject({ id: 'greeter', version: '1.2.0', digest, changed: false });
      const spawned = auditOf('run.spawned', outcome.runId)[0] as { skills: unknown[] };
      expect(spawned.skills).toEqual([{ id: 'greeter', name: 'greeter', version: '1.2.0', digest, changed: false }]);
      expect(auditOf('skill.recorded')).toEqual([
        expect.objectContaining({ skill: 'greeter', digest, version: '1.2.0' }),
      ]);
      expect(readFileSync(join(skillDir, 'SKILL.md'), 'utf8')).toContain('Say hello warmly.');
    },
  );

  it(
    'the knowledge base follows its folder: a new document is found by the next retrieval, a deleted one is ' + 'gone',
    async () => {
      const kb = McpServerResourceSchema; // (keeps the import honest: resources are parsed by apply)
      expect(kb).toBeDefined();
      const { KnowledgeBases } = await import('../../host/gateway/kb/retrieve.js');
      const kbs = new KnowledgeBases(host.dataDir, host.redactor);
      const resource = { id: 'handbook', tenant: 'default', path: kbDir, timeoutMs: 1000 };
      expect((await kbs.retrieve(resource, 'warranty', 5)).length).toBe(0);
      writeFileSync(join(kbDir, 'warranty.md'), '# Warranty\n\nEvery device has a two-year warranty.\n');
      expect((await kbs.retrieve(resource, 'warranty', 5))[0]).toMatchObject({
        source: { uri: 'warranty.md', title: 'Warranty' },
      });
      const { rmSync } = await import('node:fs');
      rmSync(join(kbDir, 'warranty.md'));
      expect((await kbs.retrieve(resource, 'warranty', 5)).length).toBe(0);
      kbs.close();
    },
  );
});

describe('a changed skill is flagged', () => {
  it(
    'content edited after apply: skill.changed audit record, a ' + 'warning in the run, changed: true on the handle',
    async () => {
      const dir = join(root, 'changing-skill');
      mkdirSync(dir);
      writeFileSync(join(dir, 'SKILL.md'), '---\nname: changing\n---\nversion one\n');
      host.apply({
        resources: { skills: [{ id: 'changing', name: 'changing', path: dir }] },
        bindings: [
          {
            id: 'gw-skill',
            runner: 'calls-gateway',
            route: { bot: 'skill' },
            sandbox: 'process',
            grants: { skills: ['changing'] },
          },
        ],
      });
      const recorded = readSkill(dir, 'changing').digest;
      writeFileSync(join(dir, 'SKILL.md'), "---\nname: changing\n---\nversion two, edited behind the admin's back\n");
      const { outcome, report, updates } = await dispatch('skill');
      expect(outcome.status, outcome.reason).toBe('completed');
      expect(report.skills[0]).toMatchObject({
        id: 'changing',
        changed: true,
        digest: readSkill(dir, 'changing').digest,
      });
      expect(auditOf('skill.changed', outcome.runId)).toEqual([
        { skill: 'changing', name: 'changing', digest: readSkill(dir, 'changing').digest, recorded },
      ]);
      expect(updates).toContainEqual(
        expect.objectContaining({
          kind: 'log',
          level: 'warn',
          message: expect.stringContaining('skill changing changed'),
        }),
      );
      // Applying again accepts the new content.
      host.apply({ resources: { skills: [{ id: 'changing', name: 'changing', path: dir }] } });
      expect((await dispatch('skill')).report.skills[0]).toMatchObject({ changed: false });
    },
  );
});

describe('the MCP endpoint, driven by the official MCP client', () => {
  it(
    'lists only allowed tools, refuses a denied one without ' + 'forwarding it, needs the run token; process backend',
    async () => {
      const server = McpServerResourceSchema.parse({
        id: 'tools',
        command: process.execPath,
        args: [MCP_SERVER],
        timeoutMs: 5000,
        tools: { deny: ['delete_everything'] },
      });
      const handle = await openGatewayRun(host, {
        runId: `run-mcp-${process.pid}`,
        resources: { mcpServers: [server] },
        access: {
          mcpServers: [{ id: 'tools', allowedTools: ['echo', 'add', 'secret'], deniedTools: ['delete_everything'] }],
        },
      });
      const connect = async (token?: string) => {
        const client = new Client({ name: 'test-harness', version: '1' });
        await client.connect(
          new StreamableHTTPClientTransport(new URL(`${handle.baseUrl}/mcp/tools`), {
            requestInit: { headers: token ? { authorization: `Bearer ${token}` } : {} },
          }),
        );
        return client;
      };
      try {
        await expect(connect()).rejects.toThrow(/401|token/);
        const client = await connect(handle.token);
        const { tools } = await client.listTools();
        expect(tools.map((t) => t.name).sort()).toEqual(['add', 'echo', 'secret']);
        expect(await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } })).toMatchObject({
          content: [{ type: 'text', text: '5' }],
        });
        const denied = await client.callTool({ name: 'delete_everything', arguments: {} });
        expect(denied).toMatchObject({
          isError: true,
          content: [{ text: expect.stringContaining('mcpServer.tools.deny') }],
        });
        const notGranted = await client.callTool({ name: 'hang', arguments: {} });
        expect(notGranted).toMatchObject({
          isError: true,
          content: [{ text: expect.stringContaining('binding.mcpServers.tools') }],
        });
        const notServer = await fetch(`${handle.baseUrl}/mcp/other`, {
          method: 'POST',
          headers: { authorization: `Bearer ${handle.token}`, 'content-type': 'application/json' },
          body: '{}',
        });
        expect(notServer.status).toBe(403);
        await client.close();
        const denials = auditOf('mcp.denied', `run-mcp-${process.pid}`);
        expect(denials.map((d) => [d.tool ?? d.server, d.deniedBy])).toEqual([
          ['delete_everything', 'mcpServer.tools.deny'],
          ['hang', 'binding.mcpServers.tools'],
          ['other', 'binding.grants.mcpServers'],
        ]);
        expect(auditOf('mcp.connected', `run-mcp-${process.pid}`)).toEqual([
          expect.objectContaining({ backend: 'process' }),
        ]);
      } finally {
        await handle.close();
      }
      expect(processesWith(MCP_SERVER)).toEqual([]);
    },
  );
});

describe('a run token dies with its run', () => {
  it('a token saved by a finished run is refused as revoked', async () => {
    const file = join(root, 'token.txt');
    host.apply({
      resources,
      bindings: [
        {
          id: 'gw-token',
          runner: 'calls-gateway',
          route: { bot: 'token' },
          sandbox: 'process',
          grants: { models: ['sm'] },
          config: {
            steps: [
              { do: 'saveToken', file },
              {
                do: 'http',
                path: '/v1/messages',
                body: { model: 'sm', max_tokens: 5, messages: [{ role: 'user', content: 'SAY:ok' }] },
              },
            ],
          },
        },
      ],
    });
    const { outcome, report } = await dispatch('token');
    expect(outcome.status, outcome.reason).toBe('completed');
    expect(report.report[1]).toMatchObject({ status: 200 });
    const token = readFileSync(file, 'utf8');
    expect(token).toMatch(/^pdk_run_/);
    const after = await fetch(`${await host.gateway.loopbackUrl()}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': token, 'content-type': 'application/json' },
      body: '{"model":"sm","messages":[]}',
    });
    expect(after.status).toBe(401);
    expect(await after.text()).toContain(`revoked (run ${outcome.runId} returned its result)`);
    expect(existsSync(file)).toBe(true);
  });
});

describe("a live bwrap run's token works only on its own socket", () => {
  it(
    "presented by the test on the host loopback URL while the run is live → 401, audited; on the run's socket → " +
      '200',
    async () => {
      host.apply({
        resources,
        bindings: [
          {
            id: 'gw-live',
            runner: 'calls-gateway',
            route: { bot: 'live' },
            sandbox: 'bwrap',
            grants: { models: ['sm'] },
            config: {
              steps: [
                { do: 'saveToken', file: 'token.txt' },
                { do: 'announce', text: 'token saved' },
                { do: 'waitFile', file: 'go' },
              ],
            },
          },
        ],
      });
      let announced!: () => void;
      const saved = new Promise<void>((resolve) => (announced = resolve));
      const ticket = await host.dispatcher.dispatch(chatEvent({ bot: 'live' }), {
        onUpdate: (u) => (u as { kind: string; message?: string }).message === 'token saved' && announced(),
      });
      if (ticket.status === 'duplicate') throw new Error('duplicate');
      await saved;
      const workspace = join(host.dataDir, 'workspaces', ticket.runId);
      const token = readFileSync(join(workspace, 'token.txt'), 'utf8');
      expect(token).toMatch(/^pdk_run_/);
      const body = JSON.stringify({
        model: 'sm',
        max_tokens: 5,
        messages: [{ role: 'user', content: 'SAY:from outside' }],
      });
      const loopback = await fetch(`${await host.gateway.loopbackUrl()}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': token },
        body,
      });
      expect(loopback.status).toBe(401);
      expect(await loopback.text()).toContain("valid only on its run's own gateway socket");
      expect(auditOf('gateway.denied').filter((d) => d.tokenRunId === ticket.runId)).toEqual([
        expect.objectContaining({
          reason: 'token of a sandboxed run on the loopback listener',
          deniedBy: 'gateway.runToken',
        }),
      ]);
      const { request } = await import('node:http');
      const viaSocket = await new Promise<number>((resolve, reject) => {
        const req = request(
          {
            socketPath: join(host.dataDir, 'sockets', `${ticket.runId}.gateway.sock`),
            path: '/v1/messages',
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-api-key': token },
          },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end(body);
      });
      expect(viaSocket).toBe(200);
      writeFileSync(join(workspace, 'go'), '');
      const outcome = await ticket.done;
      expect(outcome.status, outcome.reason).toBe('completed');
    },
    60_000,
  );
});

describe(
  "budgets hold for a real runner's concurrent calls (HTTP through its socket or loopback, and SDK " +
    'model/complete)',
  () => {
    const cases = [
      { via: 'http', sandbox: 'bwrap', count: 50 },
      { via: 'complete', sandbox: 'bwrap', count: 50 },
      { via: 'http', sandbox: 'process', count: 20 },
      { via: 'complete', sandbox: 'process', count: 20 },
    ] as const;
    for (const { via, sandbox, count } of cases) {
      it(
        `${count} concurrent ${via === 'http' ? 'raw HTTP calls' : 'model/complete requests'} under ${sandbox}, ` +
          `modelTokensPerRun 60: metered ≤ 60, refusals name the budget and are audited`,
        async () => {
          const bot = `burst-${via}-${sandbox}`;
          host.apply({
            resources,
            bindings: [
              {
                id: bot,
                runner: 'calls-gateway',
                route: { bot },
                sandbox,
                grants: { models: ['sm'] },
                limits: { modelTokensPerRun: 60 },
                config: { steps: [{ do: 'burst', via, count, model: 'sm', text: 'LONG:20 SLOW:40', maxTokens: 5 }] },
              },
            ],
          });
          const { outcome, report } = await dispatch(bot);
          expect(outcome.status, outcome.reason).toBe('completed');
          const answers = report.report[0] as unknown as (
            | { ok: true }
            | { status: number; text: string }
            | { error: { code: number; message: string; data: { deniedBy?: string; status?: number } } }
          )[];
          expect(answers).toHaveLength(count);
          const calls = rawDb(host.store)
            .prepare('SELECT * FROM gateway_calls WHERE run_id = ? AND status = 200')
            .all(outcome.runId) as { input_tokens: number; output_tokens: number; endpoint: string }[];
          expect(calls.reduce((sum, c) => sum + c.input_tokens + c.output_tokens, 0)).toBeLessThanOrEqual(60);
          expect(calls.every((c) => c.endpoint === (via === 'http' ? 'anthropic' : 'model/complete'))).toBe(true);
          const ok = answers.filter((a) => 'ok' in a || ('status' in a && a.status === 200));
          expect(ok.length).toBe(calls.length);
          expect(ok.length).toBeGreaterThanOrEqual(1);
          const refused = answers.filter((a) => !ok.includes(a));
          expect(refused.length).toBe(count - ok.length);
          for (const a of refused) {
            if (via === 'http') {
              const r = a as { status: number; text: string };
              expect(r.status).toBe(403);
              expect(JSON.parse(r.text)).toMatchObject({
                type: 'error',
                error: {
                  type: 'permission_error',
                  message: expect.stringContaining('model budget limits.modelTokensPerRun'),
                },
              });
            } else {
              const r = a as { error: { code: number; message: string; data: { deniedBy?: string; status?: number } } };
              expect(r.error).toMatchObject({
                code: ErrorCodes.QuotaExceeded,
                message: expect.stringContaining('model budget limits.modelTokensPerRun'),
                data: { deniedBy: 'binding.limits.modelTokensPerRun', status: 403 },
              });
            }
          }
          const denied = auditOf('gateway.denied', outcome.runId);
          expect(denied).toHaveLength(refused.length);
          expect(denied.every((d) => d.deniedBy === 'binding.limits.modelTokensPerRun')).toBe(true);
          expect(rawDb(host.store).prepare('SELECT COUNT(*) FROM gateway_reservations').pluck().get()).toBe(0);
        },
        60_000,
      );
    }
  },
);

describe('a per-day budget shared by two concurrent runs of one binding, over SDK model/complete', () => {
  it("two live runs fire 20 calls each; the binding's metered day stays within modelTokensPerDay 90", async () => {
    host.apply({
      resources,
      bindings: [
        {
          id: 'day-shared',
          runner: 'calls-gateway',
          route: { bot: 'day' },
          sandbox: 'process',
          grants: { models: ['sm'] },
          limits: { modelTokensPerDay: 90 },
          config: {
            steps: [{ do: 'burst', via: 'complete', count: 20, model: 'sm', text: 'LONG:20 SLOW:40', maxTokens: 5 }],
          },
        },
      ],
    });
    const tickets = await Promise.all(
      ['day-a', 'day-b'].map((id) => host.dispatcher.dispatch(chatEvent({ bot: 'day', conversation: { id } }))),
    );
    const outcomes = await Promise.all(
      tickets.map((t) => (t.status === 'duplicate' ? Promise.reject(new Error('duplicate')) : t.done)),
    );
    for (const o of outcomes) expect(o.status, o.reason).toBe('completed');
    const day = rawDb(host.store)
      .prepare(
        'SELECT COALESCE(SUM(input_tokens + output_tokens), 0) FROM gateway_calls WHERE binding_id = ' +
          "'day-shared' AND status = 200",
      )
      .pluck()
      .get() as number;
    expect(day).toBeGreaterThan(0);
    expect(day).toBeLessThanOrEqual(90);
    const answers = outcomes.flatMap(
      (o) => (JSON.parse((o.result!.output!.parts[0] as { text: string }).text) as { report: unknown[][] }).report[0]!,
    ) as ({ ok: true } | { error: { code: number; message: string } })[];
    const refused = answers.filter((a) => 'error' in a) as { error: { code: number; message: string } }[];
    expect(refused.length).toBeGreaterThan(0);
    expect(
      refused.every(
        (a) =>
          a.error.code === ErrorCodes.QuotaExceeded &&
          a.error.message.includes('model budget limits.modelTokensPerDay') &&
          a.error.message.includes('the binding in the last 24 h'),
      ),
    ).toBe(true);
    expect(
      outcomes.reduce(
        (n, o) =>
          n +
          auditOf('gateway.denied', o.runId).filter((d) => d.deniedBy === 'binding.limits.modelTokensPerDay').length,
        0,
      ),
    ).toBe(refused.length);
    expect(answers.length - refused.length).toBe(
      rawDb(host.store)
        .prepare("SELECT COUNT(*) FROM gateway_calls WHERE binding_id = 'day-shared' AND status = 200")
        .pluck()
        .get(),
    );
  }, 60_000);
});

describe('the run token is revoked the moment the host reads the run result', () => {
  for (const sandbox of ['process', 'bwrap'] as const) {
    it(
      `a ${sandbox} runner that returned its result and keeps calling (HTTP and model/complete) is refused and ` +
        `audited`,
      async () => {
        const bot = `after-${sandbox}`;
        host.apply({
          resources,
          bindings: [{ id: bot, runner: 'after-result', route: { bot }, sandbox, grants: { models: ['sm'] } }],
        });
        const ticket = await host.dispatcher.dispatch(chatEvent({ bot }));
        if (ticket.status === 'duplicate') throw new Error('duplicate');
        const outcome = await ticket.done;
        expect(outcome.status, outcome.reason).toBe('completed');
        const line = outcome.stderrTail.split('\n').find((l) => l.startsWith('{"afterResult"'));
        expect(line, outcome.stderrTail).toBeDefined();
        const { http, sdk } = (
          JSON.parse(line!) as {
            afterResult: { http: { status: number; text: string }; sdk: { code: number; message: string } };
          }
        ).afterResult;
        expect(http.status).toBe(401);
        expect((JSON.parse(http.text) as { error: { message: string } }).error.message).toBe(
          `paddock: the run token is revoked (run ${outcome.runId} returned its result)`,
        );
        expect(sdk.code).toBe(ErrorCodes.RunNotActive);
        // Both refusals are audited; nothing reached the model.
        const tokenDenials = auditOf('gateway.denied').filter((d) => d.tokenRunId === outcome.runId);
        expect(tokenDenials).toEqual([
          expect.objectContaining({ reason: 'token revoked', deniedBy: 'gateway.runToken' }),
        ]);
        expect(auditOf('policy.denied', outcome.runId)).toEqual([
          expect.objectContaining({ method: 'model/complete', deniedBy: 'connection.activeRun' }),
        ]);
        expect(
          rawDb(host.store).prepare('SELECT COUNT(*) FROM gateway_calls WHERE run_id = ?').pluck().get(outcome.runId),
        ).toBe(0);
      },
      60_000,
    );
  }
});

describe('remote resources: an MCP server over streamable HTTP and an HTTP retriever, with their credentials', () => {
  it(
    'the host connects with the referenced header, the run sees only the endpoint; the retriever gets the key, ' +
      'the run gets chunks',
    async () => {
      const { createServer } = await import('node:http');
      const { McpServer } = await import('@modelcontextprotocol/sdk/server/mcp.js');
      const { StreamableHTTPServerTransport } = await import('@modelcontextprotocol/sdk/server/streamableHttp.js');
      const { z } = await import('zod');
      const MCP_AUTH = `Bearer remote-mcp-secret-${process.pid}-x7Yq`;
      const KB_KEY = `kb-retriever-key-${process.pid}-Vb2n`;
      process.env.PADDOCK_TEST_REMOTE_MCP_AUTH = MCP_AUTH;
      process.env.PADDOCK_TEST_KB_KEY = KB_KEY;
      const seen: { mcpAuth: (string | undefined)[]; kbAuth: (string | undefined)[] } = { mcpAuth: [], kbAuth: [] };
      const server = createServer((req, res) => {
        let raw = '';
        req.on('data', (c) => (raw += c));
        // The handler awaits the MCP transport; a throw answers 500 instead of an unhandled rejection.
        req.on('end', () => void answer().catch(() => res.writeHead(500).end()));
        const answer = async () => {
          if (req.url === '/retrieve') {
            seen.kbAuth.push(req.headers.authorization);
            const { query, topK } = JSON.parse(raw) as { query: string; topK: number };
            res.writeHead(200, { 'content-type': 'application/json' }).end(
              JSON.stringify({
                chunks: [{ text: `about ${query}`, source: { id: 'doc-1', title: 'Doc one' }, score: 0.9 }].slice(
                  0,
                  topK,
                ),
              }),
            );
            return;
          }
          seen.mcpAuth.push(req.headers.authorization);
          if (req.headers.authorization !== MCP_AUTH) return void res.writeHead(401).end();
          const mcp = new McpServer({ name: 'remote', version: '1' });
          mcp.registerTool('shout', { inputSchema: { text: z.string() } }, async ({ text }) => ({
            content: [{ type: 'text', text: text.toUpperCase() }],
          }));
          const transport = new StreamableHTTPServerTransport({
            sessionIdGenerator: undefined,
            enableJsonResponse: true,
          });
          res.on('close', () => void transport.close());
          await mcp.connect(transport);
          await transport.handleRequest(req, res, raw ? (JSON.parse(raw) as unknown) : undefined);
        };
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const base = `http://127.0.0.1:${(server.address() as import('node:net').AddressInfo).port}`;
      try {
        host.apply({
          resources: {
            mcpServers: [
              { id: 'remote', url: `${base}/mcp`, headers: { Authorization: { env: 'PADDOCK_TEST_REMOTE_MCP_AUTH' } } },
            ],
            knowledgeBases: [{ id: 'wiki', url: `${base}/retrieve`, apiKey: { env: 'PADDOCK_TEST_KB_KEY' } }],
          },
          bindings: [
            {
              id: 'gw-remote',
              runner: 'calls-gateway',
              route: { bot: 'remote' },
              sandbox: 'process',
              grants: { mcpServers: ['remote'], knowledgeBases: ['wiki'] },
              config: {
                steps: [
                  { do: 'tool', server: 'remote', tool: 'shout', arguments: { text: 'quiet' } },
                  { do: 'kb', knowledgeBase: 'wiki', query: 'lighthouses' },
                  { do: 'env' },
                ],
              },
            },
          ],
        });
        const { outcome, report } = await dispatch('remote');
        expect(outcome.status, outcome.reason).toBe('completed');
        expect(report.report[0]).toMatchObject({ content: [{ type: 'text', text: 'QUIET' }], isError: false });
        expect(report.report[1]).toEqual({
          chunks: [{ text: 'about lighthouses', source: { id: 'doc-1', title: 'Doc one' }, score: 0.9 }],
        });
        expect(seen.kbAuth).toEqual([`Bearer ${KB_KEY}`]);
        expect(seen.mcpAuth.length).toBeGreaterThan(0);
        expect(seen.mcpAuth.every((a) => a === MCP_AUTH)).toBe(true);
        // The run's own environment holds neither credential (only its run token, redacted here).
        const env = JSON.stringify(report.report[2]);
        expect(env).not.toContain('remote-mcp-secret');
        expect(env).not.toContain(KB_KEY);
        expect(auditOf('mcp.connected', outcome.runId)).toEqual([
          expect.objectContaining({ server: 'remote', transport: 'http' }),
        ]);
      } finally {
        server.close();
      }
    },
  );
});
