// The claude-code runner with the REAL Claude Code CLI (pinned, installed by
// scripts/install-harnesses.sh), offline, sandboxed, through the host gateway and its scripted
// model. Needs the harness install: fails loudly, naming the fix, when it is missing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { harnessReports } from '../../host/harness/harnesses.js';
import type { RunOutcome } from '../../host/process/outcome.js';
import type { Update } from '../../sdk/protocol/types.js';
import { repoPath } from '../helpers/fixtures.js';
import { processesWith } from '../helpers/procs.js';
import { filesContaining } from '../helpers/canary.js';
import { chatEvent, tempHost } from '../helpers/host.js';
import { quotaImage } from '../../host/sandbox/diskQuota.js';
import { rawDb } from '../helpers/rawDb.js';

const CANARY_KEY = `sk-ant-api03-harnesscanary${'K'.repeat(40)}AA`;
process.env.PADDOCK_TEST_CLAUDE_CANARY_KEY = CANARY_KEY;
const MCP_SERVER = repoPath('test/fixtures/mcp/server.mjs');

const host = tempHost({ limits: { wallClockMs: 120_000 } });
afterAll(() => host.close());

const claudeProcesses = () => processesWith('claude-code/bin/claude');

async function dispatch(
  bot: string,
  text: string,
  conversation = 'c1',
  signal?: AbortSignal,
  updates: Update[] = [],
): Promise<{ outcome: RunOutcome; updates: Update[]; sessionId: string }> {
  const ticket = await host.dispatcher.dispatch(chatEvent({ bot, text, conversation: { id: conversation } }), {
    onUpdate: (u) => updates.push(u),
  });
  if (ticket.status === 'duplicate') throw new Error('duplicate');
  if (signal)
    signal.addEventListener('abort', () => host.dispatcher.cancel(ticket.runId, 'test cancel'), { once: true });
  return { outcome: await ticket.done, updates, sessionId: ticket.sessionId };
}
const outputOf = (o: RunOutcome) => (o.result?.output?.parts[0] as { text?: string } | undefined)?.text ?? '';
const auditOf = (type: string, runId: string) =>
  (
    rawDb(host.store)
      .prepare('SELECT data FROM audit WHERE type = ? AND run_id = ? ORDER BY seq')
      .pluck()
      .all(type, runId) as string[]
  ).map((d) => JSON.parse(d) as Record<string, unknown>);

beforeAll(() => {
  const claude = harnessReports().find((h) => h.name === 'claude')!;
  expect(
    claude.version,
    `the Claude Code CLI is needed: ${claude.problem} (bash scripts/install-harnesses.sh)`,
  ).toMatch(/^2\.1\.332/);
  const binding = (
    id: string,
    bot: string,
    config: Record<string, unknown> = {},
    grants: Record<string, unknown> = {},
  ) => ({ id, runner: 'claude-code', route: { bot }, sandbox: 'bwrap', grants: { models: ['sm'], ...grants }, config });
  host.apply({
    resources: {
      models: [
        { id: 'sm', provider: 'scripted', model: 'scripted-1', maxRetries: 2 },
        // Its own circuit breaker: the failure tests must not open the one of `sm`.
        { id: 'flaky', provider: 'scripted', model: 'scripted-flaky', maxRetries: 1 },
        {
          id: 'real',
          provider: 'anthropic',
          model: 'claude-x',
          baseUrl: 'http://127.0.0.1:9',
          apiKey: { env: 'PADDOCK_TEST_CLAUDE_CANARY_KEY' },
        },
      ],
      mcpServers: [
        { id: 'tools', command: process.execPath, args: [MCP_SERVER], tools: { deny: ['delete_everything'] } },
      ],
    },
    bindings: [
      binding('cc-plain', 'plain'),
      binding('cc-bash', 'bash', { allowedTools: ['Bash(echo:*)'] }),
      binding('cc-turns', 'turns', { maxTurns: 1 }),
      binding('cc-mcp', 'mcp', {}, { mcpServers: ['tools'] }),
      binding('cc-env', 'env', { allowedTools: ['Bash(env)'] }),
      { ...binding('cc-flaky', 'flaky', { model: 'flaky' }), grants: { models: ['flaky'] } },
    ],
  });
});

describe('claude-code runner, real CLI, offline, in the bwrap sandbox', () => {
  it(
    'a text turn: the scripted reply comes back as the run ' + 'output, through the gateway with the run token',
    async () => {
      const { outcome, updates } = await dispatch('plain', 'SAY:hello from a real harness');
      expect(outcome.status, outcome.reason).toBe('completed');
      expect(outputOf(outcome)).toBe('hello from a real harness');
      expect(updates).toContainEqual(
        expect.objectContaining({ kind: 'message', parts: [{ type: 'text', text: 'hello from a real harness' }] }),
      );
      expect(outcome.result?.external?.sessionId).toMatch(/^[0-9a-f-]{36}$/);
      const calls = auditOf('gateway.call', outcome.runId);
      expect(calls.length).toBeGreaterThan(0);
      expect(calls.every((c) => c.scripted === true && c.status === 200)).toBe(true);
      // The run's usage is the host's meter (the scripted model has no pricing: $0), never Claude
      // Code's own total_cost_usd, which is kept apart and labelled (issue 11, item 19b).
      expect(outcome.usage).toMatchObject({ meteredBy: 'host gateway', modelCalls: calls.length, costUsd: 0 });
      expect(outcome.usage!.reportedByRunner).toEqual(outcome.result?.usage);
      expect(outcome.result?.usage?.costUsd, 'Claude Code reports its own cost estimate').toBeGreaterThan(0);
      expect(host.store.run(outcome.runId)!.usage).toEqual(outcome.usage);
      expect(
        host.store.session(host.store.run(outcome.runId)!.sessionId).runs.find((r) => r.runId === outcome.runId)!.usage,
      ).toMatchObject({ costUsd: 0, meteredBy: 'host gateway' });
      expect(claudeProcesses()).toEqual([]);
    },
  );
});

describe('claude-code runner: tools, permissions, resume, failures', () => {
  it('a tool round: Bash echo runs when the binding allows it', async () => {
    const { outcome, updates } = await dispatch('bash', 'USE_TOOL:Bash:echo hi');
    expect(outcome.status, outcome.reason).toBe('completed');
    expect(outputOf(outcome)).toBe('TOOL_RESULT_SEEN: hi');
    expect(updates).toContainEqual(
      expect.objectContaining({
        kind: 'tool.started',
        name: 'Bash',
        input: expect.objectContaining({ command: 'echo hi' }),
      }),
    );
    expect(updates).toContainEqual(expect.objectContaining({ kind: 'tool.finished', status: 'ok', output: 'hi' }));
  });

  it('the same without the grant is a permission denial; the run still completes', async () => {
    const { outcome, updates } = await dispatch('plain', 'USE_TOOL:Bash:echo hi', 'c-denied');
    expect(outcome.status, outcome.reason).toBe('completed');
    expect(updates).toContainEqual(expect.objectContaining({ kind: 'tool.finished', status: 'denied' }));
    expect((outcome.result as { permissionDenials?: unknown[] }).permissionDenials).toEqual([
      expect.objectContaining({ toolName: 'Bash' }),
    ]);
  });

  it('a second message resumes the same Claude Code session (history replayed to the model)', async () => {
    const first = await dispatch('plain', 'SAY:first turn', 'c-resume');
    expect(first.outcome.status, first.outcome.reason).toBe('completed');
    const second = await dispatch('plain', 'SAY:second turn', 'c-resume');
    expect(second.outcome.status, second.outcome.reason).toBe('completed');
    expect(outputOf(second.outcome)).toBe('second turn');
    expect(second.outcome.result?.external?.sessionId).toBe(first.outcome.result?.external?.sessionId);
    // The second turn's request carried the first one: more input tokens than a fresh turn.
    const tokens = (runId: string) =>
      rawDb(host.store)
        .prepare('SELECT MAX(input_tokens) FROM gateway_calls WHERE run_id = ?')
        .pluck()
        .get(runId) as number;
    expect(tokens(second.outcome.runId)).toBeGreaterThan(tokens(first.outcome.runId));
  });

  it('a saved session the CLI no longer knows starts a fresh session, and says so', async () => {
    const first = await dispatch('plain', 'SAY:remember me', 'c-lost');
    expect(first.outcome.status, first.outcome.reason).toBe('completed');
    // The session's files are lost (another machine, a wiped folder); the host still has the id.
    const { rmSync } = await import('node:fs');
    // Between runs the session folder's files live in its quota image (host/sandbox/diskQuota.ts): losing it loses
    // them.
    rmSync(quotaImage(host.dataDir, 'sessions', first.sessionId), { force: true });
    const second = await dispatch('plain', 'SAY:fresh start', 'c-lost');
    expect(second.outcome.status, second.outcome.reason).toBe('completed');
    expect(outputOf(second.outcome)).toBe('fresh start');
    expect(second.updates).toContainEqual(
      expect.objectContaining({
        kind: 'log',
        level: 'warn',
        message: `claude: session ${first.outcome.result?.external?.sessionId} was not found; starting a fresh session`,
      }),
    );
    expect(second.outcome.result?.external?.sessionId).not.toBe(first.outcome.result?.external?.sessionId);
  });

  it("maximum turns reached fails the run with the harness's reason", async () => {
    const { outcome } = await dispatch('turns', 'USE_TOOL:Read:/etc/hostname');
    expect(outcome.status).toBe('failed');
    expect(outcome.reason).toMatch(/max.?turns|maximum number of turns/i);
  });

  it(
    'a provider 429 is retried by the gateway and the turn ' + 'succeeds; repeated 500s fail the run with the reason',
    async () => {
      const ok = await dispatch('flaky', 'FAIL:429x1 SAY:after a 429', 'c-429');
      expect(ok.outcome.status, ok.outcome.reason).toBe('completed');
      expect(outputOf(ok.outcome)).toBe('after a 429');
      expect(auditOf('gateway.call', ok.outcome.runId).some((c) => c.attempts === 2)).toBe(true);
      const bad = await dispatch('flaky', 'FAIL:500', 'c-500');
      expect(bad.outcome.status).toBe('failed');
      expect(bad.outcome.reason).toMatch(/500/);
    },
    120_000,
  );

  it("an MCP tool call goes through the run's host endpoint to the real server", async () => {
    const { outcome, updates } = await dispatch('mcp', 'USE_TOOL:mcp__tools__echo:{"text":"via the host"}');
    expect(outcome.status, outcome.reason).toBe('completed');
    expect(outputOf(outcome)).toContain('TOOL_RESULT_SEEN: echo: via the host');
    expect(updates).toContainEqual(expect.objectContaining({ kind: 'tool.started', name: 'mcp__tools__echo' }));
    expect(auditOf('mcp.call', outcome.runId)).toEqual([
      expect.objectContaining({ server: 'tools', tool: 'echo', outcome: 'ok' }),
    ]);
  });

  it('cancel mid-stream ends the run cancelled and leaves no process', async () => {
    const controller = new AbortController();
    const updates: Update[] = [];
    // 50 chunks 300 ms apart: a 15 s stream.
    const running = dispatch('plain', 'SLOW:300 LONG:50', 'c-cancel', controller.signal, updates);
    // Cancel once Claude Code has started its session (its model call follows at once).
    while (!updates.some((u) => u.kind === 'log' && u.message.startsWith('claude 2.1.332 session')))
      await new Promise((r) => setTimeout(r, 20));
    controller.abort();
    const { outcome } = await running;
    expect(outcome.status).toBe('cancelled');
    expect(claudeProcesses()).toEqual([]);
  });

  it(
    'the harness never sees the provider key: its environment holds only the run token, and a canary key is in ' +
      'no stored byte',
    async () => {
      const { outcome, updates } = await dispatch('env', 'USE_TOOL:Bash:env', 'c-env');
      expect(outcome.status, outcome.reason).toBe('completed');
      const env = String((updates.find((u) => u.kind === 'tool.finished') as { output?: string } | undefined)?.output);
      // The run token is the API key (redacted in every stored and streamed byte), the gateway the base URL.
      expect(env).toContain('ANTHROPIC_API_KEY=[REDACTED]');
      expect(env).toMatch(/ANTHROPIC_BASE_URL=http:\/\/127\.0\.0\.1:3129/);
      expect(env).not.toContain('PADDOCK_TEST_CLAUDE_CANARY_KEY');
      expect(env).not.toContain(CANARY_KEY);
      rawDb(host.store).pragma('wal_checkpoint(PASSIVE)');
      expect(filesContaining(host.dataDir, CANARY_KEY)).toEqual([]);
    },
  );
});
