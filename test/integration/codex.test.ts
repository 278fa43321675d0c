// The codex runner with the REAL Codex CLI (pinned, installed by scripts/install-harnesses.sh),
// offline, sandboxed, through the host gateway's Responses endpoint and its scripted model.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { harnessReports } from '../../host/harness/harnesses.js';
import type { RunOutcome } from '../../host/process/outcome.js';
import { decideApproval, listApprovals, type ApprovalRow } from '../../host/state/approvals.js';
import type { Update } from '../../sdk/protocol/types.js';
import { repoPath } from '../helpers/fixtures.js';
import { processesWith } from '../helpers/procs.js';
import { chatEvent, tempHost } from '../helpers/host.js';
import { rawDb } from '../helpers/rawDb.js';
import { pendingApproval } from '../helpers/approvals.js';

const MCP_SERVER = repoPath('test/fixtures/mcp/server.mjs');
const host = tempHost({ limits: { wallClockMs: 120_000 } });
afterAll(() => host.close());

/**
 * Live Codex processes of this file's host (its launcher and native binary both live under @openai/codex; the runner
 * gives the CLI the run's home, `<data>/workspaces/<run>/home`): another host's on the same machine are not ours.
 */
const codexProcesses = () => processesWith('@openai/codex', `HOME=${host.dataDir}/`);

async function dispatch(
  bot: string,
  text: string,
  conversation = 'c1',
  updates: Update[] = [],
  signal?: AbortSignal,
): Promise<{ outcome: RunOutcome; updates: Update[] }> {
  const ticket = await host.dispatcher.dispatch(chatEvent({ bot, text, conversation: { id: conversation } }), {
    onUpdate: (u) => updates.push(u),
  });
  if (ticket.status === 'duplicate') throw new Error('duplicate');
  if (signal)
    signal.addEventListener('abort', () => host.dispatcher.cancel(ticket.runId, 'test cancel'), { once: true });
  return { outcome: await ticket.done, updates };
}
const outputOf = (o: RunOutcome) => (o.result?.output?.parts[0] as { text?: string } | undefined)?.text ?? '';
/** The run's next pending approval (test/helpers/approvals.ts). */
const pendingOf = (runId: string) => pendingApproval(host.store, runId);
const decide = (row: ApprovalRow, outcome: 'approved' | 'denied') => {
  const r = decideApproval(host.store, row.id, { outcome, by: 'user:test-approver', at: new Date().toISOString() });
  expect(r.ok).toBe(true);
};
/** Dispatch to the approvals binding; the run's id at once, its outcome and updates later. */
async function dispatchAsk(text: string, conversation: string) {
  const updates: Update[] = [];
  const ticket = await host.dispatcher.dispatch(
    chatEvent({ bot: 'cx-ask', text, conversation: { id: conversation } }),
    {
      onUpdate: (u) => updates.push(u),
    },
  );
  if (ticket.status === 'duplicate') throw new Error('duplicate');
  return { runId: ticket.runId, done: ticket.done, updates };
}
const auditOf = (type: string, runId: string) =>
  (
    rawDb(host.store)
      .prepare('SELECT data FROM audit WHERE type = ? AND run_id = ? ORDER BY seq')
      .pluck()
      .all(type, runId) as string[]
  ).map((d) => JSON.parse(d) as Record<string, unknown>);

describe('codex runner, real CLI, offline, in the bwrap sandbox', () => {
  beforeAll(() => {
    const codex = harnessReports().find((h) => h.name === 'codex')!;
    expect(codex.version, `the Codex CLI is needed: ${codex.problem} (bash scripts/install-harnesses.sh)`).toMatch(
      /0\.171\.0/,
    );
    const binding = (
      id: string,
      bot: string,
      config: Record<string, unknown> = {},
      grants: Record<string, unknown> = {},
    ) => ({ id, runner: 'codex', route: { bot }, sandbox: 'bwrap', grants: { models: ['sm'], ...grants }, config });
    host.apply({
      resources: {
        models: [{ id: 'sm', provider: 'scripted', model: 'scripted-1', maxRetries: 2 }],
        mcpServers: [
          { id: 'tools', command: process.execPath, args: [MCP_SERVER], tools: { deny: ['delete_everything'] } },
        ],
      },
      bindings: [
        binding('cx', 'cx'),
        binding('cx-mcp', 'cx-mcp', {}, { mcpServers: ['tools'] }),
        {
          // Codex's own sandbox lets approved patches write the workspace (read-only, they fail after approval).
          ...binding('cx-ask', 'cx-ask', { sandbox: 'workspace-write' }, { approval: true }),
          approvalPolicy: 'ask',
          // Writes in the workspace are allowed by default: asking about these lets a person decide a patch.
          policy: [{ effect: 'fs.write', match: { path: 'notes/**' }, decision: 'ask' }],
        },
      ],
    });
  });

  it('a text turn, its version recorded, usage as a running total', async () => {
    const { outcome, updates } = await dispatch('cx', 'SAY:hello from codex');
    expect(outcome.status, outcome.reason).toBe('completed');
    expect(outputOf(outcome)).toBe('hello from codex');
    expect(updates).toContainEqual(
      expect.objectContaining({ kind: 'log', message: expect.stringContaining('codex version: codex-cli 0.171.0') }),
    );
    expect(updates).toContainEqual(expect.objectContaining({ kind: 'usage', cumulative: true }));
    expect(outcome.result?.external?.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(auditOf('gateway.call', outcome.runId).every((c) => c.scripted === true && c.endpoint === 'responses')).toBe(
      true,
    );
  });

  it('a tool round: the shell command runs and its output reaches the model', async () => {
    const { outcome, updates } = await dispatch('cx', 'USE_TOOL:Bash:echo hi', 'c-tool');
    expect(outcome.status, outcome.reason).toBe('completed');
    expect(outputOf(outcome)).toMatch(/^TOOL_RESULT_SEEN: .*hi/s);
    expect(updates).toContainEqual(expect.objectContaining({ kind: 'tool.finished', status: 'ok', output: 'hi\n' }));
  });

  it('a second message resumes the same thread', async () => {
    const first = await dispatch('cx', 'SAY:one', 'c-resume');
    const second = await dispatch('cx', 'SAY:two', 'c-resume');
    expect(second.outcome.status, second.outcome.reason).toBe('completed');
    expect(second.outcome.result?.external?.sessionId).toBe(first.outcome.result?.external?.sessionId);
  });

  it(
    "MCP: Codex connects to the run's host endpoint (never the " + 'server) and discovers the allowed tools there',
    async () => {
      // Codex 0.171 defers MCP tools behind its client-side tool_search, which the scripted model
      // does not drive; what is proven here is the wiring: the only MCP endpoint Codex knows is the
      // host's, and the host connected the real server for this run.
      const { outcome } = await dispatch('cx-mcp', 'SAY:tools are there', 'c-mcp');
      expect(outcome.status, outcome.reason).toBe('completed');
      expect(auditOf('mcp.connected', outcome.runId)).toEqual([
        expect.objectContaining({ server: 'tools', transport: 'stdio', backend: 'bwrap' }),
      ]);
    },
  );

  it('cancel ends the run cancelled with no process left', async () => {
    const updates: Update[] = [];
    const controller = new AbortController();
    const running = dispatch('cx', 'SLOW:300 LONG:50', 'c-cancel', updates, controller.signal);
    while (!updates.some((u) => u.kind === 'log' && u.message.startsWith('codex thread')))
      await new Promise((r) => setTimeout(r, 20));
    // The check below finds this run's Codex while it runs: its emptiness after the cancel is not vacuous.
    expect(codexProcesses()).not.toEqual([]);
    controller.abort();
    const { outcome } = await running;
    expect(outcome.status).toBe('cancelled');
    expect(codexProcesses()).toEqual([]);
  });

  describe('approvals granted: codex app-server, its approval requests decided by the host', () => {
    it('an approved command runs: the host asked about exactly it, once', async () => {
      const run = await dispatchAsk('USE_TOOL:Bash:touch approved-by-host && echo made', 'c-ask-yes');
      const row = await pendingOf(run.runId);
      expect(row).toMatchObject({
        effect: 'exec',
        target: { kind: 'command', value: 'touch approved-by-host && echo made' },
      });
      decide(row, 'approved');
      const outcome = await run.done;
      expect(outcome.status, outcome.reason).toBe('completed');
      expect(outputOf(outcome)).toMatch(/^TOOL_RESULT_SEEN: .*exited with code 0.*made/s);
      expect(run.updates).toContainEqual(
        expect.objectContaining({ kind: 'tool.finished', status: 'ok', output: 'made\n' }),
      );
      expect(run.updates).toContainEqual(expect.objectContaining({ kind: 'usage', cumulative: true }));
      expect(outcome.result?.external?.sessionId).toMatch(/^[0-9a-f-]{36}$/);
      expect(listApprovals(host.store, { runId: run.runId, limit: 10 })).toHaveLength(1);
      expect(codexProcesses()).toEqual([]);
    });

    it('a denied command does not run, Codex is told, and the run completes', async () => {
      const run = await dispatchAsk('USE_TOOL:Bash:echo must-not-run > denied-file', 'c-ask-no');
      decide(await pendingOf(run.runId), 'denied');
      const outcome = await run.done;
      expect(outcome.status, outcome.reason).toBe('completed');
      expect(outputOf(outcome)).toMatch(/^TOOL_RESULT_SEEN: .*rejected/s);
      expect(run.updates).toContainEqual(expect.objectContaining({ kind: 'tool.finished', status: 'denied' }));
      expect(run.updates.some((u) => u.kind === 'tool.finished' && u.status === 'ok')).toBe(false);
      expect(codexProcesses()).toEqual([]);
    });

    it('a patch asks fs.write of its file, workspace-relative; approved, it is applied', async () => {
      const patch = "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: notes/hello.txt\n+hi\n*** End Patch\nEOF\n";
      const run = await dispatchAsk(`USE_TOOL:Bash:${JSON.stringify({ cmd: patch })}`, 'c-ask-patch');
      const row = await pendingOf(run.runId);
      expect(row).toMatchObject({ effect: 'fs.write', target: { kind: 'path', value: 'notes/hello.txt' } });
      decide(row, 'approved');
      const outcome = await run.done;
      expect(outcome.status, outcome.reason).toBe('completed');
      expect(outputOf(outcome)).toMatch(/Success\. Updated the following files:\nA notes\/hello\.txt/);
    });

    it('the next message resumes the thread over the app-server', async () => {
      const first = await dispatchAsk('SAY:one', 'c-ask-resume');
      const second = await dispatchAsk('SAY:two', 'c-ask-resume');
      const [a, b] = [await first.done, await second.done];
      expect(b.status, b.reason).toBe('completed');
      expect(outputOf(b)).toBe('two');
      expect(b.result?.external?.sessionId).toBe(a.result?.external?.sessionId);
    });

    it('cancel while an approval is pending ends the run cancelled with no process left', async () => {
      const run = await dispatchAsk('USE_TOOL:Bash:touch never-decided', 'c-ask-cancel');
      await pendingOf(run.runId);
      host.dispatcher.cancel(run.runId, 'test cancel');
      const outcome = await run.done;
      expect(outcome.status).toBe('cancelled');
      expect(codexProcesses()).toEqual([]);
    });
  });
});
