// Codex's command line, environment and `exec --json` parser: this runner's own.
import { proxyEnv, type RunResult, type UpdateInput } from 'paddock/sdk';

type Obj = Record<string, unknown>;

/** How a runner wants `codex exec` started. */
export interface CodexOptions {
  prompt: string;
  /** The gateway's OpenAI base URL (ends in /v1). */
  baseUrl: string;
  /** The granted model id, sent as `x-paddock-model` (Codex itself is given a bundled model name). */
  model: string;
  /** A model name from Codex's bundled list (no "model metadata not found" warning). */
  codexModel: string;
  sandbox: 'read-only' | 'workspace-write' | 'danger-full-access';
  /** The run's host MCP endpoints, by server id. */
  mcp: Record<string, string>;
  /** Thread to continue (`codex exec resume <id>`), from host-owned state. */
  resume?: string;
  /** Name of the env var holding the run token. */
  tokenEnv: string;
  /**
   * The host gave the run an egress proxy (the binding's `network.egress`): let `workspace-write`
   * commands use the network, which then reaches only the allowlist through the proxy.
   */
  egress?: boolean;
  /** More writable roots (`--add-dir`): the run's read-write mounts. */
  addDirs?: string[];
}

const toml = (s: string) => JSON.stringify(s);

/** The `-c` settings both modes share: the gateway as the only provider, analytics off, the run's MCP endpoints. */
export function codexConfig(o: Omit<CodexOptions, 'prompt' | 'codexModel' | 'resume' | 'addDirs'>): string[] {
  return [
    'model_provider=paddock',
    'model_providers.paddock.name=paddock',
    `model_providers.paddock.base_url=${toml(o.baseUrl)}`,
    `model_providers.paddock.env_key=${toml(o.tokenEnv)}`,
    'model_providers.paddock.wire_api="responses"',
    `model_providers.paddock.http_headers={ "x-paddock-model" = ${toml(o.model)} }`,
    // The gateway already retries with backoff behind a circuit breaker.
    'model_providers.paddock.request_max_retries=1',
    'model_providers.paddock.stream_max_retries=1',
    'analytics.enabled=false',
    ...(o.egress && o.sandbox === 'workspace-write' ? ['sandbox_workspace_write.network_access=true'] : []),
    ...Object.entries(o.mcp).flatMap(([id, url]) => [
      `mcp_servers.${id}.url=${toml(url)}`,
      `mcp_servers.${id}.bearer_token_env_var=${toml(o.tokenEnv)}`,
      // The host starts the real server (under the run's sandbox) when Codex first connects; Codex's default 10 s
      // wait is short on a loaded machine, and Codex then goes on without the server's tools.
      `mcp_servers.${id}.startup_timeout_sec=30`,
    ]),
  ];
}

/** The `codex exec --json` command line: a gateway provider, plugins and analytics off, the binding's sandbox mode. */
export function codexArgs(o: CodexOptions): string[] {
  const config = codexConfig(o);
  return [
    'exec',
    '--json',
    '--skip-git-repo-check',
    '--disable',
    'plugins',
    ...config.flatMap((c) => ['-c', c]),
    '-m',
    o.codexModel,
    '-s',
    o.sandbox,
    ...(o.addDirs ?? []).flatMap((d) => ['--add-dir', d]),
    ...(o.resume ? ['resume', o.resume] : []),
    '--',
    o.prompt,
  ];
}

/**
 * Codex's environment: its home in the session folder (resume), temp files outside it, the run token, the run's
 * egress proxy variables.
 */
export function codexEnv(input: {
  path: string;
  home: string;
  codexHome: string;
  tmp: string;
  tokenEnv: string;
  token: string;
  proxy?: NodeJS.ProcessEnv;
}): Record<string, string> {
  return {
    PATH: input.path,
    HOME: input.home,
    CODEX_HOME: input.codexHome,
    // Not under CODEX_HOME: Codex refuses to create its helper links under a temp dir that holds it.
    TMPDIR: input.tmp,
    LANG: 'C.UTF-8',
    [input.tokenEnv]: input.token,
    ...proxyEnv(input.proxy),
  };
}

const clip = (s: string, max = 4_000) => (s.length <= max ? s : `${s.slice(0, max)}… (${s.length - max} more chars)`);
const ITEM_STATUS: Record<string, 'ok' | 'error' | 'denied' | 'cancelled'> = {
  completed: 'ok',
  failed: 'error',
  declined: 'denied',
};

/**
 * Maps `codex exec --json` events to run updates. `turn.completed` usage is the thread's running
 * total (replaced, not summed); a top-level `error` is not terminal (Codex emits one per retry);
 * only `turn.completed` / `turn.failed` end a turn.
 */
export class CodexStreamMapper {
  threadId: string | undefined;
  finalMessage = '';
  completed = false;
  failure: string | undefined;
  usage: Obj | undefined;
  readonly errors: string[] = [];

  map(v: Obj): UpdateInput[] {
    switch (v.type) {
      case 'thread.started':
        this.threadId = typeof v.thread_id === 'string' ? v.thread_id : undefined;
        return [{ kind: 'log', level: 'info', message: `codex thread ${this.threadId ?? '?'}` }];
      case 'turn.started':
        return [{ kind: 'progress', message: 'codex turn started' }];
      case 'item.started':
      case 'item.updated':
      case 'item.completed':
        return this.item(v.type, (v.item ?? {}) as Obj);
      case 'turn.completed': {
        this.completed = true;
        this.usage = (v.usage ?? {}) as Obj;
        const n = (x: unknown) => (typeof x === 'number' ? x : 0);
        return [
          {
            kind: 'usage',
            cumulative: true,
            usage: {
              inputTokens: n(this.usage.input_tokens),
              outputTokens: n(this.usage.output_tokens),
              cacheReadTokens: n(this.usage.cached_input_tokens),
            },
          },
        ];
      }
      case 'turn.failed':
        this.failure = String(((v.error ?? {}) as Obj).message ?? 'turn failed');
        return [{ kind: 'log', level: 'error', message: `codex: turn failed: ${this.failure}` }];
      case 'error':
        this.errors.push(String(v.message ?? ''));
        return [{ kind: 'log', level: 'warn', message: `codex: ${String(v.message ?? 'error')}` }];
      default:
        return [{ kind: 'log', level: 'debug', message: `codex: ${String(v.type)}`, data: v }];
    }
  }

  private item(event: string, item: Obj): UpdateInput[] {
    const id = String(item.id ?? '');
    const done = event === 'item.completed';
    switch (item.type) {
      case 'agent_message':
        if (!done) return [];
        this.finalMessage = String(item.text ?? '');
        return [
          { kind: 'message', messageId: id, role: 'assistant', parts: [{ type: 'text', text: this.finalMessage }] },
        ];
      case 'reasoning':
        return done
          ? [{ kind: 'log', level: 'debug', message: `codex reasoning: ${clip(String(item.text ?? ''), 500)}` }]
          : [];
      case 'command_execution':
      case 'file_change':
      case 'mcp_tool_call':
      case 'web_search': {
        const name = item.type === 'mcp_tool_call' ? `${String(item.server)}.${String(item.tool)}` : String(item.type);
        const input =
          item.type === 'command_execution'
            ? { command: item.command }
            : item.type === 'file_change'
              ? { changes: item.changes }
              : item.type === 'mcp_tool_call'
                ? { arguments: item.arguments }
                : { query: item.query };
        if (event === 'item.started') return [{ kind: 'tool.started', toolCallId: id, name, input }];
        if (!done) return [];
        const status = ITEM_STATUS[String(item.status)] ?? 'ok';
        const output =
          item.type === 'command_execution'
            ? clip(String(item.aggregated_output ?? ''))
            : item.type === 'mcp_tool_call'
              ? (item.result ?? null)
              : undefined;
        const error =
          item.type === 'mcp_tool_call' && item.error
            ? String((item.error as Obj).message)
            : status !== 'ok'
              ? `${name} ` +
                `${String(item.status)}${item.exit_code !== undefined ? ` (exit ${String(item.exit_code)})` : ''}`
              : undefined;
        // A tool that finishes without having started (older Codex) still gets its start.
        return [
          ...(event === 'item.completed' && item.type !== 'command_execution'
            ? [{ kind: 'tool.started' as const, toolCallId: id, name, input }]
            : []),
          {
            kind: 'tool.finished',
            toolCallId: id,
            status,
            ...(output !== undefined ? { output } : {}),
            ...(error ? { error } : {}),
          },
        ];
      }
      case 'todo_list':
        return [
          {
            kind: 'progress',
            message:
              'codex plan: ' +
              ((item.items as Obj[] | undefined) ?? [])
                .map((t) => `${t.completed ? '✓' : '·'} ${String(t.text)}`)
                .join('; '),
          },
        ];
      case 'error':
        return done ? [{ kind: 'log', level: 'warn', message: `codex: ${String(item.message ?? '')}` }] : [];
      default:
        return [{ kind: 'log', level: 'debug', message: `codex item: ${String(item.type)}`, data: item }];
    }
  }

  /** The run's result: completed only with a `turn.completed`; anything else failed with the reason. */
  runResult(
    exit: { exitCode: number | null; signal: string | null; stderrTail: string },
    version: string | undefined,
  ): RunResult {
    const external = this.threadId ? { sessionId: this.threadId } : undefined;
    const n = (x: unknown) => (typeof x === 'number' ? x : 0);
    const common = {
      ...(external ? { external } : {}),
      ...(this.usage
        ? {
            usage: {
              inputTokens: n(this.usage.input_tokens),
              outputTokens: n(this.usage.output_tokens),
              cacheReadTokens: n(this.usage.cached_input_tokens),
            },
          }
        : {}),
      harness: { name: 'codex', version: version ?? null },
    };
    if (this.completed && !this.failure)
      return { status: 'completed', output: { parts: [{ type: 'text', text: this.finalMessage }] }, ...common };
    const why =
      this.failure ??
      this.errors.at(-1) ??
      `codex ended without completing its turn (exit ${exit.exitCode ?? exit.signal}): ` +
        `${exit.stderrTail.trim().slice(-500) || 'no stderr'}`;
    return {
      status: 'failed',
      error: { code: this.failure ? 'turn_failed' : 'no_turn_completed', message: why },
      ...common,
    };
  }
}
