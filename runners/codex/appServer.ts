// Codex's app-server (JSON-RPC over stdio, `codex app-server`), used when the binding grants approval requests: the
// CLI's approval requests become the host's `approval/request` (docs/approvals.md, "Harness bridges"). Checked
// against the schema `codex app-server generate-ts` prints for the pinned 0.171.0, and the real binary offline.
import { isAbsolute, relative } from 'node:path';
import type { UpdateInput, Effect } from 'paddock/sdk';
import { CodexStreamMapper, codexConfig, type CodexOptions } from './codex.js';

type Obj = Record<string, unknown>;

/** The action an approval request asks the host to approve (the host classifies the target again itself). */
export interface CodexAction {
  effect: Effect;
  target: string;
  summary: string;
}

/** The host's answer, as far as Codex is told. */
export interface CodexAnswer {
  decision: 'approved' | 'denied';
  reason?: string;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : undefined);
const obj = (v: unknown): Obj => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});

/** The `codex app-server` command line: the same gateway provider and MCP settings as `exec`; plugins off. */
export function appServerArgs(o: Omit<CodexOptions, 'prompt' | 'codexModel' | 'resume'>): string[] {
  const roots = o.addDirs ?? [];
  return [
    'app-server',
    '--disable',
    'plugins',
    ...codexConfig(o).flatMap((c) => ['-c', c]),
    // `exec --add-dir` in config form: more writable roots of Codex's own `workspace-write` sandbox.
    ...(roots.length ? ['-c', `sandbox_workspace_write.writable_roots=${JSON.stringify(roots)}`] : []),
  ];
}

/** A path as the host's workspace sees it: relative when it lies in the run's workspace, as given otherwise. */
export function workspaceRelative(root: string, path: string): string {
  if (!isAbsolute(path)) return path;
  const rel = relative(root, path);
  return rel === '' ? '.' : rel.startsWith('..') || isAbsolute(rel) ? path : rel;
}

/** The script of `/bin/bash -lc '<script>'` (Codex's wrapper, the exact text bash runs), else the command itself. */
export function unwrapShell(command: string): string {
  const m = /^(?:\/bin\/|\/usr\/bin\/)?(?:ba|z)?sh -lc '([^']*)'$/.exec(command);
  return m?.[1] ?? command;
}

/**
 * The actions one server→client request asks about, in order (all must be approved), or undefined when it is no
 * approval request: a command (`item/commandExecution/requestApproval`, legacy `execCommandApproval`) → exec of its
 * text (network of the host when it asks for network access); a patch (`item/fileChange/requestApproval`, legacy
 * `applyPatchApproval`) → fs.write of each file, workspace-relative, the files taken from the `fileChange` item
 * Codex announced before asking (`items`), else exec of "apply a patch", which the host asks about by default.
 */
export function codexApprovalActions(
  method: string,
  params: Obj,
  items: ReadonlyMap<string, Obj>,
  root: string,
): CodexAction[] | undefined {
  const reason = str(params.reason);
  const because = reason ? ` (${reason})` : '';
  const patch = (paths: string[]): CodexAction[] =>
    paths.length
      ? paths.map((p) => ({
          effect: 'fs.write',
          target: workspaceRelative(root, p),
          summary: `Codex edits ${p}${because}`,
        }))
      : [{ effect: 'exec', target: 'apply a patch', summary: `Codex applies a patch naming no file${because}` }];
  switch (method) {
    case 'item/commandExecution/requestApproval': {
      const command = str(params.command);
      const network = obj(params.networkApprovalContext);
      if (str(network.host))
        return [{ effect: 'network', target: String(network.host), summary: `Codex wants network access${because}` }];
      if (params.kind === 'writeStdin')
        return [{ effect: 'exec', target: command ?? 'write to a running command', summary: 'Codex writes to stdin' }];
      const target = command ? unwrapShell(command) : 'an unnamed command';
      return [{ effect: 'exec', target, summary: `Codex runs ${target}${because}` }];
    }
    case 'execCommandApproval': {
      const argv = Array.isArray(params.command) ? params.command.map(String) : [];
      const target =
        argv.length >= 3 && /(^|\/)(ba|z)?sh$/.test(argv[0]!) && argv[1] === '-lc'
          ? argv.slice(2).join(' ')
          : argv.join(' ');
      return [{ effect: 'exec', target: target || 'an unnamed command', summary: `Codex runs ${target}${because}` }];
    }
    case 'item/fileChange/requestApproval': {
      const item = items.get(String(params.itemId));
      const changes = Array.isArray(item?.changes) ? (item.changes as unknown[]) : [];
      return patch(changes.map((c) => str(obj(c).path)).filter((p): p is string => p !== undefined));
    }
    case 'applyPatchApproval':
      return patch(Object.keys(obj(params.fileChanges)));
    default:
      return undefined;
  }
}

/**
 * The answer to an approval request: approved → approve this one call (never "for the session", never an exec
 * policy or network amendment: the host's own grants answer the next ask); denied → decline (the turn goes on).
 */
export function codexApprovalResult(method: string, answer: CodexAnswer): Obj {
  const approved = answer.decision === 'approved';
  if (method === 'execCommandApproval' || method === 'applyPatchApproval')
    return {
      decision: approved ? 'approved' : { denied: { rejection: `paddock: ${answer.reason ?? 'denied by the host'}` } },
    };
  return { decision: approved ? 'accept' : 'decline' };
}

const INITIALIZE = 1;
const THREAD = 2;
const TURN = 3;
const FRESH_THREAD = 4;

/** What a session needs to know. */
export interface AppServerSessionOptions {
  prompt: string;
  codexModel: string;
  sandbox: CodexOptions['sandbox'];
  cwd: string;
  /** Thread to continue (`thread/resume`), from host-owned state. */
  resume?: string;
  version: string;
}

/** Notifications that carry nothing a run update needs (streamed deltas, status flags, rate limits). */
const QUIET = /(\/delta$|^thread\/status\/changed$|^account\/|^remoteControl\/|^serverRequest\/resolved$)/;

const CAMEL_TO_EXEC: Record<string, string> = {
  agentMessage: 'agent_message',
  reasoning: 'reasoning',
  commandExecution: 'command_execution',
  fileChange: 'file_change',
  mcpToolCall: 'mcp_tool_call',
  webSearch: 'web_search',
  plan: 'plan',
};
const STATUS: Record<string, string> = { inProgress: 'in_progress' };

/** An app-server thread item in the shape of a `codex exec --json` item (the mapper's). */
export function execItem(item: Obj): Obj | undefined {
  const type = CAMEL_TO_EXEC[String(item.type)];
  if (!type) return undefined;
  const status = STATUS[String(item.status)] ?? item.status;
  const common = { id: item.id, type, ...(status !== undefined ? { status } : {}) };
  switch (type) {
    case 'agent_message':
    case 'plan':
      return { ...common, text: item.text };
    case 'reasoning':
      return {
        ...common,
        text: [
          ...((item.summary as string[] | undefined) ?? []),
          ...((item.content as string[] | undefined) ?? []),
        ].join('\n'),
      };
    case 'command_execution':
      return {
        ...common,
        command: item.command,
        aggregated_output: item.aggregatedOutput ?? '',
        ...(typeof item.exitCode === 'number' ? { exit_code: item.exitCode } : {}),
      };
    case 'file_change':
      return {
        ...common,
        changes: ((item.changes as Obj[] | undefined) ?? []).map((c) => ({ path: c.path, kind: obj(c.kind).type })),
      };
    case 'mcp_tool_call':
      return {
        ...common,
        server: item.server,
        tool: item.tool,
        arguments: item.arguments,
        result: item.result,
        error: item.error,
      };
    default:
      return { ...common, query: item.query };
  }
}

/**
 * One run's conversation with `codex app-server`: `initialize`, then `thread/start` (or `thread/resume`, falling back
 * to a fresh thread when it fails), then one `turn/start`; its notifications mapped to run updates through the
 * `exec` mapper; stdin closes after `turn/completed` (the server then exits).
 */
export class AppServerSession {
  readonly mapper = new CodexStreamMapper();
  /** File-change items by id: an approval request names only the item. */
  readonly items = new Map<string, Obj>();
  private usage: Obj | undefined;
  private ended = false;

  constructor(private readonly o: AppServerSessionOptions) {}

  /** What to write first: the handshake and the thread request (the server takes them in order). */
  initial(): Obj[] {
    return [
      {
        id: INITIALIZE,
        method: 'initialize',
        params: { clientInfo: { name: 'paddock', title: null, version: this.o.version }, capabilities: null },
      },
      { method: 'initialized' },
      this.o.resume
        ? { id: THREAD, method: 'thread/resume', params: { threadId: this.o.resume, ...this.threadParams() } }
        : { id: THREAD, method: 'thread/start', params: this.threadParams() },
    ];
  }

  /**
   * Codex's own approval policy and sandbox: `untrusted` asks about every command outside its known-safe read-only
   * set (and every patch); answers come only from the host.
   */
  private threadParams(): Obj {
    return { model: this.o.codexModel, cwd: this.o.cwd, approvalPolicy: 'untrusted', sandbox: this.o.sandbox };
  }

  /** Run updates for one line of the server. */
  map(msg: Obj): UpdateInput[] {
    const method = str(msg.method);
    const params = obj(msg.params);
    if (method === undefined) return this.response(msg);
    if (msg.id !== undefined) return []; // A request of the server: answered by `answer`.
    if (QUIET.test(method)) return [];
    switch (method) {
      case 'turn/started':
        return this.mapper.map({ type: 'turn.started' });
      case 'item/started':
      case 'item/completed': {
        const raw = obj(params.item);
        if (raw.type === 'fileChange') this.items.set(String(raw.id), raw);
        const item = execItem(raw);
        return item
          ? this.mapper.map({ type: method === 'item/started' ? 'item.started' : 'item.completed', item })
          : [];
      }
      case 'thread/tokenUsage/updated':
        this.usage = obj(obj(params.tokenUsage).total);
        return [];
      case 'error':
        return this.mapper.map({ type: 'error', message: obj(params.error).message ?? 'error' });
      case 'turn/completed': {
        this.ended = true;
        const turn = obj(params.turn);
        if (turn.status === 'completed') {
          const u = this.usage ?? {};
          return this.mapper.map({
            type: 'turn.completed',
            usage: {
              input_tokens: u.inputTokens,
              cached_input_tokens: u.cachedInputTokens,
              output_tokens: u.outputTokens,
            },
          });
        }
        if (turn.status === 'failed')
          return this.mapper.map({ type: 'turn.failed', error: { message: obj(turn.error).message ?? 'turn failed' } });
        return [{ kind: 'log', level: 'warn', message: `codex: turn ${String(turn.status)}` }];
      }
      default:
        return [{ kind: 'log', level: 'debug', message: `codex: ${method}`, data: params }];
    }
  }

  /** Updates for the server's answer to one of our requests. */
  private response(msg: Obj): UpdateInput[] {
    const error = msg.error === undefined ? undefined : String(obj(msg.error).message ?? JSON.stringify(msg.error));
    if (msg.id === THREAD && this.o.resume && error !== undefined)
      return [
        {
          kind: 'log',
          level: 'warn',
          message: `codex: thread ${this.o.resume} could not be resumed (${error}); starting a fresh thread`,
        },
      ];
    if (error !== undefined) {
      this.ended = true;
      return this.mapper.map({ type: 'turn.failed', error: { message: `codex app-server: ${error}` } });
    }
    const thread = obj(obj(msg.result).thread);
    if ((msg.id === THREAD || msg.id === FRESH_THREAD) && str(thread.id))
      return this.mapper.map({ type: 'thread.started', thread_id: thread.id });
    return [];
  }

  /**
   * What to write for one line of the server, if anything: the turn once the thread is there (a fresh thread if
   * resuming failed); the answer to a server request (approvals through `ask`, all of a patch's files approved or
   * declined; a permission widening refused without asking; anything else "not served").
   */
  answer(msg: Obj, ask: (action: CodexAction) => Promise<CodexAnswer>): Promise<Obj> | undefined {
    const method = str(msg.method);
    if (method === undefined) {
      if (msg.id === THREAD && this.o.resume && msg.error !== undefined)
        return Promise.resolve({ id: FRESH_THREAD, method: 'thread/start', params: this.threadParams() });
      const thread = obj(obj(msg.result).thread);
      if ((msg.id === THREAD || msg.id === FRESH_THREAD) && str(thread.id))
        return Promise.resolve({
          id: TURN,
          method: 'turn/start',
          params: { threadId: thread.id, input: [{ type: 'text', text: this.o.prompt, text_elements: [] }] },
        });
      return undefined;
    }
    if (msg.id === undefined) return undefined;
    const id = msg.id;
    const params = obj(msg.params);
    if (method === 'item/permissions/requestApproval')
      // Codex asking for more than its sandbox allows: never granted (nothing a model sends widens the run's grants).
      return Promise.resolve({ id, result: { permissions: {}, scope: 'turn' } });
    const actions = codexApprovalActions(method, params, this.items, this.o.cwd);
    if (!actions) return Promise.resolve({ id, error: { code: -32601, message: `paddock does not serve ${method}` } });
    return (async () => {
      let answer: CodexAnswer = { decision: 'approved' };
      for (const action of actions) {
        answer = await ask(action);
        if (answer.decision !== 'approved') break;
      }
      return { id, result: codexApprovalResult(method, answer) };
    })();
  }

  /** Whether stdin should close after this line (the turn ended, or could not start). */
  endAfter(): boolean {
    return this.ended;
  }
}
