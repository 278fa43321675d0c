// The acp runner driving a real ACP agent process (a fixture written with the official SDK) in
// the bwrap sandbox: updates, fs through the host path policy, terminals refused, permissions
// denied (or approved through the host), MCP through the host endpoint, session load from host state, cancel.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunOutcome } from '../../host/process/outcome.js';
import type { Update } from '../../sdk/protocol/types.js';
import { HARNESS_DIR } from '../../host/harness/harnesses.js';
import { repoPath } from '../helpers/fixtures.js';
import { chatEvent, tempHost } from '../helpers/host.js';
import { paddock } from '../helpers/cli.js';
import { rawDb } from '../helpers/rawDb.js';
import { processesWith } from '../helpers/procs.js';
import { pendingApproval } from '../helpers/approvals.js';

const AGENT = repoPath('test/fixtures/acp/agent.mjs');
const ADAPTER = join(HARNESS_DIR, 'node_modules', '@agentclientprotocol', 'claude-agent-acp', 'dist', 'index.js');
// The agent program lives outside the runner's folder: the binding makes it readable (readPaths).
const host = tempHost({ limits: { wallClockMs: 60_000 }, mountRoots: [repoPath('test/fixtures/acp')] });
afterAll(() => host.close());

async function dispatch(
  bot: string,
  text: string,
  conversation = 'c1',
): Promise<{ outcome: RunOutcome; updates: Update[]; runId: string }> {
  const updates: Update[] = [];
  const ticket = await host.dispatcher.dispatch(chatEvent({ bot, text, conversation: { id: conversation } }), {
    onUpdate: (u) => updates.push(u),
  });
  if (ticket.status === 'duplicate') throw new Error('duplicate');
  return { outcome: await ticket.done, updates, runId: ticket.runId };
}
/** Start a run; its id at once, its outcome (and updates) when it ends. */
async function start(bot: string, text: string, conversation = `c-${Math.random()}`) {
  const updates: Update[] = [];
  const ticket = await host.dispatcher.dispatch(chatEvent({ bot, text, conversation: { id: conversation } }), {
    onUpdate: (u) => updates.push(u),
  });
  if (ticket.status === 'duplicate') throw new Error('duplicate');
  return { runId: ticket.runId, updates, done: ticket.done };
}
/** The run's next pending approval (test/helpers/approvals.ts). */
const pendingOf = (runId: string) => pendingApproval(host.store, runId);
/** Decide with the real CLI, in another process, through the store. */
async function decide(id: string, verb: 'approve' | 'deny', reason: string) {
  const cli = await paddock(['approvals', verb, id, '--reason', reason], { dataDir: host.dataDir });
  expect(cli.exitCode, cli.stderr).toBe(0);
}
const outputOf = (o: RunOutcome) => (o.result?.output?.parts[0] as { text?: string } | undefined)?.text ?? '';

describe('acp runner with a real ACP agent process (bwrap)', () => {
  beforeAll(() => {
    const acp = (id: string, bot: string, grants: Record<string, unknown> = {}) => ({
      id,
      runner: 'acp',
      route: { bot },
      sandbox: 'bwrap',
      grants,
      readPaths: [repoPath('test/fixtures/acp')],
      config: { command: process.execPath, args: [AGENT] },
    });
    host.apply({
      resources: {
        models: [{ id: 'sm', provider: 'scripted', model: 'scripted-1' }],
        mcpServers: [
          {
            id: 'tools',
            command: process.execPath,
            args: [repoPath('test/fixtures/mcp/server.mjs')],
            tools: { deny: ['delete_everything'] },
          },
        ],
      },
      bindings: [
        acp('acp', 'acp'),
        { ...acp('acp-ask', 'acp-ask', { approval: true }), approvalPolicy: 'ask' },
        acp('acp-fs', 'acp-fs', { fs: 'readwrite', mcpServers: ['tools'] }),
        // A real ACP agent from npm: the Claude Code ACP adapter, installed with the harness CLIs.
        {
          id: 'acp-claude',
          runner: 'acp',
          route: { bot: 'acp-claude' },
          sandbox: 'bwrap',
          grants: { models: ['sm'] },
          config: { command: process.execPath, args: [ADAPTER], modelGateway: 'anthropic' },
        },
        {
          id: 'acp-claude-ask',
          runner: 'acp',
          route: { bot: 'acp-claude-ask' },
          sandbox: 'bwrap',
          grants: { models: ['sm'], approval: true },
          approvalPolicy: 'ask',
          config: { command: process.execPath, args: [ADAPTER], modelGateway: 'anthropic', mode: 'default' },
        },
      ],
    });
  });

  it('a prompt streams agent_message_chunk updates and completes with the text', async () => {
    const { outcome, updates } = await dispatch('acp', 'SAY:hello over ACP');
    expect(outcome.status, outcome.reason).toBe('completed');
    expect(outputOf(outcome)).toBe('hello over ACP');
    // The agent's two chunks arrive as two deltas; the host holds a message's last ~200 characters
    // back until it ends (redaction), so the text may come with a final delta.
    const deltas = updates.filter((u) => u.kind === 'message.delta').map((u) => (u as { text: string }).text);
    expect(deltas.length).toBeGreaterThanOrEqual(2);
    expect(deltas.join('')).toBe('hello over ACP');
    expect(outcome.result?.external?.sessionId).toMatch(/^sess_/);
  });

  it(
    'fs requests go through the host path policy: workspace files work, outside paths and links do not; without ' +
      'the grant, no fs at all',
    async () => {
      const { outcome: wrote } = await dispatch('acp-fs', 'WRITE:out/note.txt|from the agent', 'fs-1');
      expect(outputOf(wrote)).toBe('wrote');
      const { outcome: outside } = await dispatch('acp-fs', 'READ:/etc/hostname', 'fs-2');
      expect(outputOf(outside)).toMatch(/^error -32602: .*only paths inside the run workspace/);
      const { outcome: dotdot } = await dispatch('acp-fs', 'READ:../../paddock.db', 'fs-3');
      expect(outputOf(dotdot)).toMatch(/^error/);
      const { outcome: ungranted } = await dispatch('acp', 'READ:out/note.txt', 'fs-4');
      expect(outputOf(ungranted)).toMatch(/^error -32601/);
      // readPaths are read-only: the agent cannot rewrite its own program.
      const { outcome: tamper } = await dispatch('acp-fs', `WRITE:${AGENT}|pwned`, 'fs-5');
      expect(outputOf(tamper)).toMatch(/^error/);
      expect(readFileSync(AGENT, 'utf8')).toContain('Test fixture: an ACP agent');
    },
  );

  it('terminals are refused; permission requests denied when the binding grants no approval requests', async () => {
    const { outcome: terminal } = await dispatch('acp', 'TERMINAL:ls', 't-1');
    expect(outputOf(terminal)).toMatch(/^error -32601/);
    const { outcome, updates } = await dispatch('acp', 'PERMIT:rm -rf /', 't-2');
    expect(outputOf(outcome)).toBe('permission: no');
    expect(updates).toContainEqual(expect.objectContaining({ kind: 'tool.finished', status: 'denied' }));
  });

  it(
    "MCP: the agent gets the run's host endpoint (with the run " + 'token) and its tool call goes through the host',
    async () => {
      const { outcome, runId } = await dispatch('acp-fs', 'MCP:echo:{"text":"via acp"}', 'mcp-1');
      expect(outputOf(outcome)).toBe('echo: via acp');
      const calls = rawDb(host.store)
        .prepare("SELECT data FROM audit WHERE type = 'mcp.call' AND run_id = ?")
        .pluck()
        .all(runId) as string[];
      expect(calls.map((c) => JSON.parse(c) as unknown)).toEqual([
        expect.objectContaining({ tool: 'echo', outcome: 'ok' }),
      ]);
      const { outcome: denied } = await dispatch('acp-fs', 'MCP:delete_everything:{}', 'mcp-2');
      expect(outputOf(denied)).toContain('mcpServer.tools.deny');
    },
  );

  it("the next message loads the same session from host state (the agent's history survives)", async () => {
    const first = await dispatch('acp', 'HISTORY', 'resume');
    expect(outputOf(first.outcome)).toBe('prompts in this session: 1');
    const second = await dispatch('acp', 'HISTORY', 'resume');
    expect(second.outcome.result?.external?.sessionId).toBe(first.outcome.result?.external?.sessionId);
    expect(outputOf(second.outcome)).toBe('prompts in this session: 2');
    // The replayed history of session/load is not streamed again as new updates.
    expect(
      second.updates.some(
        (u) => u.kind === 'log' && String((u as { message: string }).message).includes('user_message_chunk'),
      ),
    ).toBe(false);
  });

  it('cancel sends session/cancel; the prompt resolves cancelled and the run ends cancelled', async () => {
    const updates: Update[] = [];
    const ticket = await host.dispatcher.dispatch(
      chatEvent({ bot: 'acp', text: 'SLOW', conversation: { id: 'cancel' } }),
      { onUpdate: (u) => updates.push(u) },
    );
    if (ticket.status === 'duplicate') throw new Error('duplicate');
    while (!updates.some((u) => u.kind === 'message.delta')) await new Promise((r) => setTimeout(r, 20));
    host.dispatcher.cancel(ticket.runId, 'test cancel');
    const outcome = await ticket.done;
    expect(outcome.status, outcome.reason).toBe('cancelled');
  });

  it(
    'a real ACP agent from npm (@agentclientprotocol/claude-agent-acp 0.101.0, driving Claude Code) answers ' +
      'through the gateway, offline',
    async () => {
      expect(existsSync(ADAPTER), `the ACP adapter is installed by scripts/install-harnesses.sh: ${ADAPTER}`).toBe(
        true,
      );
      const first = await dispatch('acp-claude', 'SAY:hello via the ACP adapter', 'real-1');
      expect(first.outcome.status, first.outcome.reason).toBe('completed');
      expect(outputOf(first.outcome)).toContain('hello via the ACP adapter');
      const calls = rawDb(host.store)
        .prepare("SELECT data FROM audit WHERE type = 'gateway.call' AND run_id = ?")
        .pluck()
        .all(first.runId) as string[];
      expect(calls.map((c) => JSON.parse(c) as unknown)).toContainEqual(
        expect.objectContaining({ model: 'sm', scripted: true, status: 200 }),
      );
    },
    120_000,
  );

  it('with approval requests granted, a permission request waits for a person: approved → allow once', async () => {
    const { runId, updates, done } = await start('acp-ask', 'PERMIT:make release');
    const pending = await pendingOf(runId);
    // The request named only the call's id: its kind and command came with the agent's tool_call update.
    expect(pending).toMatchObject({ effect: 'exec', target: { kind: 'command', value: 'make release' } });
    await decide(pending.id, 'approve', 'release day');
    const outcome = await done;
    expect(outputOf(outcome)).toBe('permission: yes');
    expect(updates).toContainEqual(expect.objectContaining({ kind: 'tool.finished', status: 'ok' }));
  });

  it('the same denied: the agent hears reject, the tool call is finished denied with the reason', async () => {
    const { runId, updates, done } = await start('acp-ask', 'PERMIT:make release');
    await decide((await pendingOf(runId)).id, 'deny', 'not today');
    const outcome = await done;
    expect(outcome.status, outcome.reason).toBe('completed');
    expect(outputOf(outcome)).toBe('permission: no');
    expect(updates).toContainEqual(
      expect.objectContaining({ kind: 'tool.finished', status: 'denied', error: 'permission denied: not today' }),
    );
  });

  it(
    'the real Claude ACP adapter (in its "default" mode) asks the host about a Bash command: approved it runs, ' +
      'denied it does not',
    async () => {
      const approved = await start('acp-claude-ask', 'USE_TOOL:Bash:touch touched.txt');
      const pending = await pendingOf(approved.runId);
      expect(pending).toMatchObject({ effect: 'exec', target: { kind: 'command', value: 'touch touched.txt' } });
      await decide(pending.id, 'approve', 'fine');
      const outcome = await approved.done;
      expect(outcome.status, outcome.reason).toBe('completed');
      expect(outputOf(outcome)).toContain('TOOL_RESULT_SEEN: (Bash completed with no output)');
      expect(approved.updates).toContainEqual(expect.objectContaining({ kind: 'tool.finished', status: 'ok' }));

      const denied = await start('acp-claude-ask', 'USE_TOOL:Bash:touch touched.txt');
      await decide((await pendingOf(denied.runId)).id, 'deny', 'no touching');
      const refused = await denied.done;
      expect(refused.status, refused.reason).toBe('completed');
      // Claude Code hears the refusal and goes on; the call is finished once, denied, with the approver's reason.
      expect(outputOf(refused)).toBe('TOOL_RESULT_SEEN: User refused permission to run tool');
      expect(denied.updates.filter((u) => u.kind === 'tool.finished')).toEqual([
        expect.objectContaining({ status: 'denied', error: 'permission denied: no touching' }),
      ]);
      expect(processesWith('claude-agent-acp')).toEqual([]);
    },
    120_000,
  );
});
