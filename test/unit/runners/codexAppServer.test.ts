// The codex runner's app-server bridge (runners/codex/appServer.ts): approval requests as host actions, the host's
// answers as Codex's decisions, the conversation's order, notifications as run updates. Shapes as the pinned CLI's
// `codex app-server generate-ts` prints them and as the real binary sent them offline.
import { describe, expect, it } from 'vitest';
import {
  AppServerSession,
  appServerArgs,
  codexApprovalActions,
  codexApprovalResult,
  unwrapShell,
  type CodexAction,
} from '../../../runners/codex/appServer.js';

const ROOT = '/w/ws';
const none = new Map<string, Record<string, unknown>>();
const session = (resume?: string) =>
  new AppServerSession({
    prompt: 'do it',
    codexModel: 'gpt-5.5',
    sandbox: 'read-only',
    cwd: ROOT,
    resume,
    version: '0',
  });
const approve = () => Promise.resolve({ decision: 'approved' as const });

describe('codex approval requests as host actions', () => {
  it('a command is exec of the script bash runs; network access is network to the host; stdin is exec', () => {
    const command = (params: Record<string, unknown>) =>
      codexApprovalActions('item/commandExecution/requestApproval', { kind: 'command', ...params }, none, ROOT);
    expect(command({ command: "/bin/bash -lc 'touch a && echo b'" })).toEqual([
      { effect: 'exec', target: 'touch a && echo b', summary: 'Codex runs touch a && echo b' },
    ]);
    expect(command({ command: 'git push', reason: 'needs network' })![0]).toMatchObject({
      target: 'git push',
      summary: 'Codex runs git push (needs network)',
    });
    expect(command({ command: 'curl x', networkApprovalContext: { host: 'example.com', protocol: 'https' } })).toEqual([
      expect.objectContaining({ effect: 'network', target: 'example.com' }),
    ]);
    expect(command({ kind: 'writeStdin', command: 'python3' })).toEqual([
      expect.objectContaining({ effect: 'exec', target: 'python3' }),
    ]);
    expect(command({})?.[0]).toMatchObject({ effect: 'exec', target: 'an unnamed command' });
    // Legacy (v1) form: argv.
    expect(
      codexApprovalActions(
        'execCommandApproval',
        { command: ['/bin/bash', '-lc', 'rm -rf x'], reason: null },
        none,
        ROOT,
      ),
    ).toEqual([expect.objectContaining({ effect: 'exec', target: 'rm -rf x' })]);
  });

  it('only the exact bash -lc wrapper is unwrapped', () => {
    expect(unwrapShell("bash -lc 'ls'")).toBe('ls');
    expect(unwrapShell("/bin/bash -lc 'a' ; rm x")).toBe("/bin/bash -lc 'a' ; rm x");
    expect(unwrapShell("/bin/bash -lc 'it'\\''s'")).toBe("/bin/bash -lc 'it'\\''s'");
    expect(unwrapShell('ls -la')).toBe('ls -la');
  });

  it("a patch is fs.write of each of the announced item's files, workspace-relative", () => {
    const items = new Map([
      ['call_1', { type: 'fileChange', id: 'call_1', changes: [{ path: `${ROOT}/src/a.ts` }, { path: '/etc/x' }] }],
    ]);
    expect(codexApprovalActions('item/fileChange/requestApproval', { itemId: 'call_1' }, items, ROOT)).toEqual([
      { effect: 'fs.write', target: 'src/a.ts', summary: `Codex edits ${ROOT}/src/a.ts` },
      { effect: 'fs.write', target: '/etc/x', summary: 'Codex edits /etc/x' },
    ]);
    expect(codexApprovalActions('item/fileChange/requestApproval', { itemId: 'unknown' }, items, ROOT)).toEqual([
      expect.objectContaining({ effect: 'exec', target: 'apply a patch' }),
    ]);
    expect(
      codexApprovalActions('applyPatchApproval', { fileChanges: { [`${ROOT}/b.md`]: {} }, reason: null }, none, ROOT),
    ).toEqual([expect.objectContaining({ effect: 'fs.write', target: 'b.md' })]);
    expect(codexApprovalActions('item/tool/requestUserInput', {}, none, ROOT)).toBeUndefined();
  });

  it('approved is accept once (never for the session, never an amendment); denied is decline', () => {
    const methods = ['item/commandExecution/requestApproval', 'item/fileChange/requestApproval'];
    for (const m of methods) {
      expect(codexApprovalResult(m, { decision: 'approved' })).toEqual({ decision: 'accept' });
      expect(codexApprovalResult(m, { decision: 'denied', reason: 'no' })).toEqual({ decision: 'decline' });
    }
    expect(codexApprovalResult('execCommandApproval', { decision: 'approved' })).toEqual({ decision: 'approved' });
    expect(codexApprovalResult('applyPatchApproval', { decision: 'denied', reason: 'no' })).toEqual({
      decision: { denied: { rejection: 'paddock: no' } },
    });
  });
});

describe('the app-server conversation', () => {
  it('handshake and thread first; the turn once the thread is there; Codex asked to ask about commands', async () => {
    const s = session();
    const [init, initialized, thread] = s.initial();
    expect(init).toMatchObject({ id: 1, method: 'initialize' });
    expect(initialized).toEqual({ method: 'initialized' });
    expect(thread).toEqual({
      id: 2,
      method: 'thread/start',
      params: { model: 'gpt-5.5', cwd: ROOT, approvalPolicy: 'untrusted', sandbox: 'read-only' },
    });
    const started = { id: 2, result: { thread: { id: 't-1' } } };
    expect(s.map(started)).toContainEqual(expect.objectContaining({ message: 'codex thread t-1' }));
    expect(await s.answer(started, approve)).toEqual({
      id: 3,
      method: 'turn/start',
      params: { threadId: 't-1', input: [{ type: 'text', text: 'do it', text_elements: [] }] },
    });
    expect(s.answer({ id: 1, result: {} }, approve)).toBeUndefined();
  });

  it('a thread that cannot be resumed is started afresh, and said so', async () => {
    const s = session('old');
    expect(s.initial()[2]).toMatchObject({ method: 'thread/resume', params: { threadId: 'old' } });
    const failed = { id: 2, error: { code: -32600, message: 'no rollout found' } };
    expect(s.map(failed)).toEqual([expect.objectContaining({ level: 'warn', message: expect.stringMatching(/old/) })]);
    expect(s.endAfter()).toBe(false);
    expect(await s.answer(failed, approve)).toMatchObject({ id: 4, method: 'thread/start' });
  });

  it('approvals go to the host, a patch needs all its files approved; a widening is refused unasked', async () => {
    const s = session();
    s.map({
      method: 'item/started',
      params: { item: { type: 'fileChange', id: 'c', changes: [{ path: 'a' }, { path: 'b' }] } },
    });
    const asked: CodexAction[] = [];
    const deny = (a: CodexAction) => (asked.push(a), Promise.resolve({ decision: 'denied' as const, reason: 'no' }));
    const patch = { id: 0, method: 'item/fileChange/requestApproval', params: { itemId: 'c' } };
    expect(await s.answer(patch, deny)).toEqual({ id: 0, result: { decision: 'decline' } });
    expect(asked.map((a) => a.target)).toEqual(['a']);
    expect(await s.answer({ ...patch, id: 1 }, approve)).toEqual({ id: 1, result: { decision: 'accept' } });
    const widen = { id: 2, method: 'item/permissions/requestApproval', params: { permissions: { network: {} } } };
    expect(await s.answer(widen, () => Promise.reject(new Error('must not ask')))).toEqual({
      id: 2,
      result: { permissions: {}, scope: 'turn' },
    });
    expect(await s.answer({ id: 3, method: 'item/tool/requestUserInput', params: {} }, approve)).toMatchObject({
      id: 3,
      error: { code: -32601 },
    });
  });

  it('notifications become the exec mapper’s updates; the turn’s end closes stdin', () => {
    const s = session();
    const item = (type: string, extra: Record<string, unknown>) => ({ item: { type, id: 'i', ...extra } });
    const cmd = { command: "/bin/bash -lc 'ls'", status: 'completed', aggregatedOutput: 'x\n', exitCode: 0 };
    expect(s.map({ method: 'item/completed', params: item('commandExecution', cmd) })).toEqual([
      { kind: 'tool.finished', toolCallId: 'i', status: 'ok', output: 'x\n' },
    ]);
    const declined = { ...cmd, status: 'declined', aggregatedOutput: null, exitCode: null };
    expect(s.map({ method: 'item/completed', params: item('commandExecution', declined) })).toEqual([
      expect.objectContaining({ kind: 'tool.finished', status: 'denied', error: 'command_execution declined' }),
    ]);
    expect(s.map({ method: 'item/agentMessage/delta', params: { delta: 'x' } })).toEqual([]);
    expect(s.map({ method: 'item/completed', params: item('agentMessage', { text: 'done' }) })).toEqual([
      expect.objectContaining({ kind: 'message', parts: [{ type: 'text', text: 'done' }] }),
    ]);
    s.map({
      method: 'thread/tokenUsage/updated',
      params: { tokenUsage: { total: { inputTokens: 9, outputTokens: 2 } } },
    });
    expect(s.endAfter()).toBe(false);
    expect(s.map({ method: 'turn/completed', params: { turn: { status: 'completed' } } })).toEqual([
      { kind: 'usage', cumulative: true, usage: { inputTokens: 9, outputTokens: 2, cacheReadTokens: 0 } },
    ]);
    expect(s.endAfter()).toBe(true);
    expect(s.mapper.runResult({ exitCode: 0, signal: null, stderrTail: '' }, 'v')).toMatchObject({
      status: 'completed',
      output: { parts: [{ type: 'text', text: 'done' }] },
    });
    const failed = session();
    failed.map({ method: 'turn/completed', params: { turn: { status: 'failed', error: { message: 'boom' } } } });
    expect(failed.mapper.runResult({ exitCode: 0, signal: null, stderrTail: '' }, 'v')).toMatchObject({
      status: 'failed',
      error: { code: 'turn_failed', message: 'boom' },
    });
  });

  it('the command line: app-server with the gateway provider; granted mounts are writable roots', () => {
    const args = appServerArgs({
      baseUrl: 'http://gw/v1',
      model: 'sm',
      sandbox: 'workspace-write',
      mcp: {},
      tokenEnv: 'T',
      addDirs: ['/m/a'],
    });
    expect(args.slice(0, 3)).toEqual(['app-server', '--disable', 'plugins']);
    expect(args).toContain('model_providers.paddock.base_url="http://gw/v1"');
    expect(args).toContain('sandbox_workspace_write.writable_roots=["/m/a"]');
    expect(args).not.toContain('exec');
  });
});
