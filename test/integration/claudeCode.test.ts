// The claude-code runner with the REAL Claude Code CLI (pinned, installed by
// scripts/install-harnesses.sh), offline, sandboxed, through the host gateway and its scripted
// model. Needs the harness install: fails loudly, naming the fix, when it is missing.
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiToken } from '../../host/state/apiTokens.js';
import { listApprovals } from '../../host/state/approvals.js';
import { DEFAULT_TENANT } from '../../host/config/tenant.js';
import { resolveRunIdentity, type RunIdentity } from '../../host/sandbox/runIdentity.js';
import { startServe, type ServeChild } from '../helpers/serve.js';
import { harnessReports } from '../../host/harness/harnesses.js';
import type { RunOutcome } from '../../host/process/outcome.js';
import type { Update } from '../../sdk/protocol/types.js';
import { repoPath } from '../helpers/fixtures.js';
import { processesWith } from '../helpers/procs.js';
import { filesContaining } from '../helpers/canary.js';
import { chatEvent, tempHost } from '../helpers/host.js';
import { quotaImage } from '../../host/sandbox/diskQuota.js';
import { rawDb } from '../helpers/rawDb.js';
import { pendingApproval } from '../helpers/approvals.js';

const CANARY_KEY = `sk-ant-api03-harnesscanary${'K'.repeat(40)}AA`;
process.env.PADDOCK_TEST_CLAUDE_CANARY_KEY = CANARY_KEY;
const MCP_SERVER = repoPath('test/fixtures/mcp/server.mjs');

// A read-write folder the approval bindings mount as their workspace: what Claude Code writes there outlives the run.
// Its root is readable by the run identity, the folder its own (docs/admin-guide.md "Run identity").
const mountRoot = mkdtempSync(join(tmpdir(), 'paddock-cc-notes-'));
chmodSync(mountRoot, 0o755);
const notes = join(mountRoot, 'notes');
mkdirSync(notes);
const identity = resolveRunIdentity() as RunIdentity;
chownSync(notes, identity.uid, identity.gid);
const host = tempHost({ limits: { wallClockMs: 120_000 }, mountRoots: [mountRoot] });
// The approver's side: a real `paddock serve` on the same data folder, deciding over HTTP.
let serve: ServeChild | undefined;
let approverToken = '';
afterAll(async () => {
  await serve?.stop();
  await host.close();
  rmSync(mountRoot, { recursive: true, force: true });
});

/** Live Claude Code processes of this file's host (the runner gives the CLI the run's home, `<data>/workspaces/…`) */
const claudeProcesses = () => processesWith('claude-code/bin/claude', `HOME=${host.dataDir}/`);

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
/** Approve or deny over HTTP, as an approver of the tenant. */
async function decide(id: string, verb: 'approve' | 'deny', reason: string) {
  const r = await fetch(`${serve!.url}/v1/approvals/${id}/${verb}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${approverToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ reason }),
  });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}
const eventsOf = (type: string, runId: string) =>
  (
    rawDb(host.store)
      .prepare('SELECT data FROM events WHERE type = ? AND run_id = ? ORDER BY seq')
      .pluck()
      .all(type, runId) as string[]
  ).map((d) => JSON.parse(d) as Record<string, unknown>);
const outputOf = (o: RunOutcome) => (o.result?.output?.parts[0] as { text?: string } | undefined)?.text ?? '';
const auditOf = (type: string, runId: string) =>
  (
    rawDb(host.store)
      .prepare('SELECT data FROM audit WHERE type = ? AND run_id = ? ORDER BY seq')
      .pluck()
      .all(type, runId) as string[]
  ).map((d) => JSON.parse(d) as Record<string, unknown>);

beforeAll(async () => {
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
        // Edits a file once it has read it (Claude Code edits only a file it has read).
        {
          id: 'editor',
          provider: 'scripted',
          model: 'scripted-1',
          script: [
            {
              match: 'status: draft',
              tool: {
                name: 'Edit',
                input: {
                  file_path: 'in/mounts/notes/doc.md',
                  old_string: 'status: draft',
                  new_string: 'status: final',
                },
              },
            },
          ],
        },
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
      mounts: [{ id: 'notes', path: notes, mode: 'rw' }],
    },
    bindings: [
      binding('cc-plain', 'plain'),
      binding('cc-bash', 'bash', { allowedTools: ['Bash(echo:*)'] }),
      binding('cc-turns', 'turns', { maxTurns: 1 }),
      binding('cc-mcp', 'mcp', {}, { mcpServers: ['tools'] }),
      binding('cc-env', 'env', { allowedTools: ['Bash(env)'] }),
      // Steering append: a message during the run goes to the running CLI (stdin); Bash runs (bwrap is the boundary).
      {
        ...binding('cc-append', 'append', { permissionMode: 'bypassPermissions' }, { mounts: ['notes'] }),
        workspace: 'mount',
        steering: 'append',
      },
      { ...binding('cc-flaky', 'flaky', { model: 'flaky' }), grants: { models: ['flaky'] } },
      // Approval requests granted: the CLI's permission prompts are the host's approvals.
      {
        ...binding('cc-ask', 'ask', {}, { approval: true, mounts: ['notes'] }),
        workspace: 'mount',
        approvalPolicy: 'ask',
        policy: [
          { effect: 'exec', match: { command: 'echo hi' }, decision: 'allow' },
          { effect: 'exec', match: { command: 'touch touched.txt' }, decision: 'allow' },
          // Workspace writes are allowed by default: these wait for a person.
          { effect: 'fs.write', match: { path: 'in/mounts/notes/**' }, decision: 'ask' },
        ],
      },
      {
        ...binding('cc-edit', 'edit', { model: 'editor' }, { models: ['editor'], approval: true, mounts: ['notes'] }),
        workspace: 'mount',
        approvalPolicy: 'ask',
        policy: [{ effect: 'fs.write', match: { path: 'in/mounts/notes/**' }, decision: 'ask' }],
      },
      {
        ...binding('cc-quick', 'quick', {}, { approval: true, mounts: ['notes'] }),
        workspace: 'mount',
        approvalPolicy: 'ask',
        approvalTimeoutMs: 1_000,
        policy: [{ effect: 'fs.write', match: { path: 'in/mounts/notes/**' }, decision: 'ask' }],
      },
    ],
  });
  // Started before any run: a serve starting later would treat the runs of this host as its own to recover.
  serve = await startServe(host.dataDir);
  approverToken = createApiToken(host.store, { tenant: DEFAULT_TENANT, role: 'approver', by: 'user:test' }).token;
}, 60_000);

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
    // The check below finds this run's Claude Code while it runs: its emptiness after the cancel is not vacuous.
    expect(claudeProcesses()).not.toEqual([]);
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

describe('claude-code runner with approval requests granted: permission prompts are host approvals', () => {
  const file = (name: string) => join(notes, name);

  it('a Write waits for an approver, who approves over HTTP: the file is written', async () => {
    const { runId, updates, done } = await start('ask', 'USE_TOOL:Write:in/mounts/notes/approved.txt|approved text');
    const pending = await pendingOf(runId);
    // Claude Code names the file by its absolute path in the sandbox; the host sees it workspace-relative (and the
    // binding's `in/mounts/notes/**` rule, which made it ask, matched it).
    expect(pending).toMatchObject({
      effect: 'fs.write',
      target: { kind: 'path', value: 'in/mounts/notes/approved.txt' },
    });
    expect(existsSync(file('approved.txt')), 'nothing is written before the decision').toBe(false);
    const decided = await decide(pending.id, 'approve', 'looks right');
    expect(decided.status, JSON.stringify(decided.body)).toBe(200);
    const outcome = await done;
    expect(outcome.status, outcome.reason).toBe('completed');
    expect(readFileSync(file('approved.txt'), 'utf8')).toBe('approved text');
    expect(updates).toContainEqual(expect.objectContaining({ kind: 'tool.finished', status: 'ok' }));
    // The scripted model saw the prompt (stdin, stream-json) and then the tool's result.
    expect(outputOf(outcome)).toMatch(/^TOOL_RESULT_SEEN: /);
    expect(eventsOf('approval.decided', runId)).toEqual([
      expect.objectContaining({ approvalId: pending.id, decision: 'approved' }),
    ]);
    expect(claudeProcesses()).toEqual([]);
  }, 120_000);

  it('an Edit of a file it read waits; approved over HTTP, the file changes; denied, it does not', async () => {
    for (const verdict of ['approve', 'deny'] as const) {
      writeFileSync(file('doc.md'), 'title: notes\nstatus: draft\n');
      chownSync(file('doc.md'), identity.uid, identity.gid); // the run's identity edits it
      const { runId, done } = await start('edit', 'USE_TOOL:Read:in/mounts/notes/doc.md');
      const pending = await pendingOf(runId);
      expect(pending).toMatchObject({ effect: 'fs.write', target: { kind: 'path', value: 'in/mounts/notes/doc.md' } });
      expect((await decide(pending.id, verdict, `${verdict} the edit`)).status).toBe(200);
      const outcome = await done;
      expect(outcome.status, outcome.reason).toBe('completed');
      expect(readFileSync(file('doc.md'), 'utf8')).toBe(
        verdict === 'approve' ? 'title: notes\nstatus: final\n' : 'title: notes\nstatus: draft\n',
      );
    }
    expect(claudeProcesses()).toEqual([]);
  }, 240_000);

  it('the same denied: the file is not written, Claude Code goes on and its result names the denial', async () => {
    const { runId, updates, done } = await start('ask', 'USE_TOOL:Write:in/mounts/notes/denied.txt|denied text');
    const pending = await pendingOf(runId);
    const decided = await decide(pending.id, 'deny', 'not that file');
    expect(decided.status, JSON.stringify(decided.body)).toBe(200);
    const outcome = await done;
    expect(outcome.status, outcome.reason).toBe('completed');
    expect(existsSync(file('denied.txt'))).toBe(false);
    expect(outputOf(outcome)).toMatch(/^TOOL_RESULT_SEEN: .*not that file/);
    expect(updates).toContainEqual(expect.objectContaining({ kind: 'tool.finished', status: 'denied' }));
    expect((outcome.result as { permissionDenials?: unknown[] }).permissionDenials).toEqual([
      expect.objectContaining({ toolName: 'Write', reason: 'denied by the host: not that file' }),
    ]);
    expect(claudeProcesses()).toEqual([]);
  }, 120_000);

  it("nobody decides within the binding's approvalTimeoutMs: the prompt is denied, the run completes", async () => {
    const { runId, done } = await start('quick', 'USE_TOOL:Write:in/mounts/notes/late.txt|too late');
    const outcome = await done;
    expect(outcome.status, outcome.reason).toBe('completed');
    expect(existsSync(file('late.txt'))).toBe(false);
    expect(outputOf(outcome)).toMatch(/^TOOL_RESULT_SEEN: .*nobody decided within 1 s/);
    expect(listApprovals(host.store, { runId, limit: 10 }).map((r) => r.status)).toEqual(['expired']);
    expect(claudeProcesses()).toEqual([]);
  }, 120_000);

  it("a Bash command the binding's policy allows runs with no approval waiting", async () => {
    const { runId, updates, done } = await start('ask', 'USE_TOOL:Bash:echo hi');
    const outcome = await done;
    expect(outcome.status, outcome.reason).toBe('completed');
    expect(outputOf(outcome)).toBe('TOOL_RESULT_SEEN: hi');
    expect(updates).toContainEqual(expect.objectContaining({ kind: 'tool.finished', status: 'ok', output: 'hi' }));
    expect(listApprovals(host.store, { runId, limit: 10 })).toEqual([]);
    // Claude Code counts `echo` as read-only and never asks; it asks about `touch` (an exec to the host, which asks
    // by default): the binding's rule answers that prompt without a person.
    expect(eventsOf('approval.decided', runId)).toEqual([]);
    const touched = await start('ask', 'USE_TOOL:Bash:touch touched.txt');
    const touchedOutcome = await touched.done;
    expect(touchedOutcome.status, touchedOutcome.reason).toBe('completed');
    expect(touched.updates).toContainEqual(expect.objectContaining({ kind: 'tool.finished', status: 'ok' }));
    expect(eventsOf('approval.decided', touched.runId)).toEqual([
      expect.objectContaining({
        decision: 'approved',
        by: 'binding rule 2',
        target: { kind: 'command', value: 'touch touched.txt' },
      }),
    ]);
    expect(listApprovals(host.store, { runId: touched.runId, limit: 10 })).toEqual([]);
    expect(claudeProcesses()).toEqual([]);
  }, 120_000);

  it('the prompt reaches the model on stdin (stream-json input): the scripted reply is the output', async () => {
    const { outcome } = await dispatch('ask', 'SAY:stream-json input works', 'c-ask-text');
    expect(outcome.status, outcome.reason).toBe('completed');
    expect(outputOf(outcome)).toBe('stream-json input works');
    // stdin closed after the result line: the CLI exited by itself (the run would hang to its limit otherwise).
    expect(claudeProcesses()).toEqual([]);
    // The next message resumes the session, its prompt on stdin again.
    const second = await dispatch('ask', 'SAY:second turn on stdin', 'c-ask-text');
    expect(second.outcome.status, second.outcome.reason).toBe('completed');
    expect(outputOf(second.outcome)).toBe('second turn on stdin');
    expect(second.outcome.result?.external?.sessionId).toBe(outcome.result?.external?.sessionId);
  }, 120_000);

  it('a run cancelled while a prompt waits: the approval is void, the CLI gone, nothing written', async () => {
    const { runId, done } = await start('ask', 'USE_TOOL:Write:in/mounts/notes/cancelled.txt|never');
    await pendingOf(runId);
    host.dispatcher.cancel(runId, 'test cancel');
    const outcome = await done;
    expect(outcome.status).toBe('cancelled');
    expect(listApprovals(host.store, { runId, limit: 10 }).map((r) => r.status)).toEqual(['void']);
    expect(existsSync(file('cancelled.txt'))).toBe(false);
    expect(claudeProcesses()).toEqual([]);
  }, 120_000);
});

describe('claude-code runner with steering append: a message during the run reaches the running CLI', () => {
  it(
    'sent while Claude Code runs a tool, it is appended to the run and the next model request carries it: the ' +
      'scripted model says what it says',
    async () => {
      const go = join(notes, 'append-go');
      rmSync(go, { force: true });
      let inTool!: () => void;
      const toolRunning = new Promise<void>((resolve) => (inTool = resolve));
      // The Bash tool holds the turn open until the test releases it: the message arrives mid-turn, whatever the pace.
      const first = await host.dispatcher.dispatch(
        chatEvent({
          bot: 'append',
          text: 'USE_TOOL:Bash:until [ -e in/mounts/notes/append-go ]; do sleep 0.1; done; echo released',
          conversation: { id: 'c-append' },
        }),
        { onUpdate: (u) => u.kind === 'tool.started' && inTool() },
      );
      if (first.status === 'duplicate') throw new Error('duplicate');
      await toolRunning;
      const second = await host.dispatcher.dispatch(
        chatEvent({
          bot: 'append',
          text: 'SAY:the appended message reached the model',
          conversation: { id: 'c-append' },
        }),
      );
      expect(second).toMatchObject({ status: 'appended', runId: first.runId });
      writeFileSync(go, '');
      const outcome = await first.done;
      expect(outcome.status, outcome.reason).toBe('completed');
      // The scripted model answers only what a request says: this text came from a request carrying the message.
      expect(outputOf(outcome)).toBe('the appended message reached the model');
      expect(eventsOf('message.received', first.runId)).toEqual([
        expect.objectContaining({ appended: { goalRevision: 0 } }),
      ]);
      // stdin closed once Claude Code took every line: the CLI exited by itself, nothing is left.
      expect(claudeProcesses()).toEqual([]);
      // The conversation goes on in the same session: one run, one Claude Code session, both messages.
      expect(host.store.runs({ sessionId: first.sessionId }).length).toBe(1);
    },
    120_000,
  );
});
