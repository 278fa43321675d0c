// Claude Code's command line and stream-json parser: this runner's own (the SDK keeps the shared
// harness helpers, e.g. claudeEnv, which the acp runner uses too).
import type { RunResult, UpdateInput } from 'paddock/sdk';

type Obj = Record<string, unknown>;

/** How a runner wants Claude Code started (docs/runner-authoring.md, "Claude Code"). */
export interface ClaudeCodeOptions {
  /** The first user message: it goes on stdin (stream-json input), not in argv. */
  prompt: string;
  /** The granted model id (the gateway maps it to the provider's name). */
  model: string;
  permissionMode: 'default' | 'acceptEdits' | 'plan' | 'dontAsk' | 'bypassPermissions';
  allowedTools: string[];
  disallowedTools: string[];
  maxTurns: number;
  /** File holding the `--mcp-config` JSON (the run's host MCP endpoints). */
  mcpConfigFile?: string;
  /** Session to continue (`--resume`), from host-owned state. */
  resume?: string;
  appendSystemPrompt?: string;
  /** More directories the CLI may work in (`--add-dir`): the run's granted mounts. */
  addDirs?: string[];
  /** Permission prompts answered by the runner on stdin (`--permission-prompt-tool stdio`), the prompt sent there. */
  hostPermissions?: boolean;
}

/**
 * Settings that make Claude Code ask before its own Read, Grep or Glob touches a secret file (it reads without asking
 * in `default` mode): with the permission prompts bridged, those reads reach the host as `credential` actions, so an
 * approved one taints the run (docs/approvals.md §6). The harness's cooperation, not a boundary: the sandbox is.
 */
const SECRET_GLOBS = ['.env', '.env.*', '.envrc', '*.pem', '*.key', 'id_rsa*', 'id_ed25519*', '.netrc', '.npmrc'];
const SECRET_READS_ASK = JSON.stringify({
  permissions: {
    ask: [
      ...SECRET_GLOBS.flatMap((g) => [`Read(**/${g})`, `Grep(**/${g})`]),
      'Read(**/.ssh/**)',
      'Read(**/.aws/**)',
      'Read(**/.config/gcloud/**)',
      'Read(**/.kube/**)',
      'Read(**/.docker/config.json)',
      'Read(**/.git-credentials)',
    ],
  },
});

/**
 * Claude Code's command line for one headless run with stream-json output and input: the prompt, and any message the
 * host delivers during the run (steering `append`), go on stdin as user lines, each echoed back when the CLI takes it
 * (`--replay-user-messages`: how the runner knows no message is still waiting when a `result` comes). With
 * `hostPermissions` every permission prompt comes to the runner as a `control_request`.
 */
export function claudeArgs(o: ClaudeCodeOptions): string[] {
  return [
    '-p',
    '--input-format',
    'stream-json',
    '--replay-user-messages',
    ...(o.hostPermissions ? ['--permission-prompt-tool', 'stdio', '--settings', SECRET_READS_ASK] : []),
    '--output-format',
    'stream-json',
    '--verbose',
    '--model',
    o.model,
    '--permission-mode',
    o.permissionMode,
    '--max-turns',
    String(o.maxTurns),
    ...(o.allowedTools.length ? ['--allowedTools', o.allowedTools.join(',')] : []),
    ...(o.disallowedTools.length ? ['--disallowedTools', o.disallowedTools.join(',')] : []),
    // Only the servers we give: never the user's or the project's MCP configuration.
    '--strict-mcp-config',
    ...(o.mcpConfigFile ? ['--mcp-config', o.mcpConfigFile] : []),
    ...(o.resume ? ['--resume', o.resume] : []),
    ...(o.appendSystemPrompt ? ['--append-system-prompt', o.appendSystemPrompt] : []),
    ...(o.addDirs?.length ? ['--add-dir', ...o.addDirs] : []),
  ];
}

/** A tool the CLI was not allowed to run, as its result reports it. */
export interface PermissionDenial {
  toolName: string;
  toolUseId: string;
  reason: string;
}

const text = (v: unknown): string =>
  typeof v === 'string'
    ? v
    : Array.isArray(v)
      ? v.map((b) => (b && typeof b === 'object' ? String((b as Obj).text ?? '') : '')).join('')
      : '';
const clip = (s: string, max = 4_000) => (s.length <= max ? s : `${s.slice(0, max)}… (${s.length - max} more chars)`);

/**
 * Maps Claude Code's stream-json lines to run updates and its `result` line to a RunResult.
 * Keeps what the run needs afterwards: the session id `system/init` confirmed, the tools it
 * denied, whether a result arrived.
 */
export class ClaudeStreamMapper {
  /** Set by `system/init`: the session the CLI actually runs (the only id worth saving). */
  sessionId: string | undefined;
  version: string | undefined;
  result: Obj | undefined;
  readonly denials: PermissionDenial[] = [];
  private readonly tools = new Map<string, string>();
  private readonly deniedIds = new Set<string>();

  constructor(private readonly disallowed: string[] = []) {}

  /** A tool use the runner denied (a permission prompt the host answered no): its result is a denial. */
  deny(toolUseId: string, toolName: string, reason: string): void {
    if (this.deniedIds.has(toolUseId)) return;
    this.deniedIds.add(toolUseId);
    this.denials.push({ toolName, toolUseId, reason });
  }

  /** Updates for one stdout line (unknown line types are kept as `log`). */
  map(value: Obj): UpdateInput[] {
    switch (value.type) {
      case 'system':
        return this.system(value);
      case 'assistant':
        return this.assistant(value);
      case 'user':
        return this.user(value);
      case 'result':
        this.result = value;
        return [];
      case 'control_request': {
        // A permission prompt (the runner answers it): named, never its whole input (a Write's content).
        const request = (value.request ?? {}) as Obj;
        const tool = typeof request.tool_name === 'string' ? ` ${request.tool_name}` : '';
        return [{ kind: 'log', level: 'debug', message: `claude: control_request ${String(request.subtype)}${tool}` }];
      }
      default:
        return [{ kind: 'log', level: 'debug', message: `claude: ${String(value.type)}`, data: value }];
    }
  }

  private system(v: Obj): UpdateInput[] {
    if (v.subtype === 'init') {
      this.sessionId = typeof v.session_id === 'string' ? v.session_id : undefined;
      this.version = typeof v.claude_code_version === 'string' ? v.claude_code_version : undefined;
      return [
        {
          kind: 'log',
          level: 'info',
          message:
            `claude ${this.version ?? '?'} session ${this.sessionId ?? '?'} (model ${String(v.model)}, ` +
            `permission mode ${String(v.permissionMode)})`,
          data: { tools: v.tools, mcpServers: v.mcp_servers },
        },
      ];
    }
    if (v.subtype === 'permission_denied') {
      const id = String(v.tool_use_id ?? '');
      this.deniedIds.add(id);
      this.denials.push({ toolName: String(v.tool_name ?? '?'), toolUseId: id, reason: String(v.message ?? 'denied') });
      return [
        { kind: 'log', level: 'warn', message: `claude denied ${String(v.tool_name)}: ${String(v.message ?? '')}` },
      ];
    }
    if (v.subtype === 'api_retry') {
      return [
        {
          kind: 'log',
          level: 'warn',
          message:
            `claude: model call failed (${String(v.error_status ?? v.error)}), retry ${String(v.attempt)}/` +
            `${String(v.max_retries)} in ${String(v.retry_delay_ms)} ms`,
        },
      ];
    }
    return [{ kind: 'log', level: 'debug', message: `claude: system/${String(v.subtype)}`, data: v }];
  }

  private assistant(v: Obj): UpdateInput[] {
    const message = (v.message ?? {}) as Obj;
    const messageId = typeof message.id === 'string' ? message.id : undefined;
    const out: UpdateInput[] = [];
    // One line per content block (all sharing message.id), but accept several.
    for (const block of (Array.isArray(message.content) ? message.content : []) as Obj[]) {
      if (block.type === 'text' && typeof block.text === 'string')
        out.push({ kind: 'message', messageId, role: 'assistant', parts: [{ type: 'text', text: block.text }] });
      else if (block.type === 'tool_use') {
        const id = String(block.id);
        this.tools.set(id, String(block.name));
        out.push({ kind: 'tool.started', toolCallId: id, name: String(block.name), input: block.input });
      } else out.push({ kind: 'log', level: 'debug', message: `claude: ${String(block.type)} block` });
    }
    return out;
  }

  private user(v: Obj): UpdateInput[] {
    const message = (v.message ?? {}) as Obj;
    const out: UpdateInput[] = [];
    for (const block of (Array.isArray(message.content) ? message.content : []) as Obj[]) {
      if (block.type !== 'tool_result') continue;
      const id = String(block.tool_use_id);
      const output = clip(text(block.content));
      const name = this.tools.get(id) ?? '?';
      // A tool that is not available to the CLI (disallowed by the binding) is a denial too.
      const unavailable =
        block.is_error === true &&
        this.disallowed.some((t) => t === name || t.startsWith(`${name}(`)) &&
        /No such tool available|disabled/i.test(output);
      if (unavailable && !this.deniedIds.has(id)) {
        this.deniedIds.add(id);
        this.denials.push({ toolName: name, toolUseId: id, reason: 'not granted by the binding (disallowed tool)' });
      }
      const status = this.deniedIds.has(id) ? 'denied' : block.is_error === true ? 'error' : 'ok';
      out.push({
        kind: 'tool.finished',
        toolCallId: id,
        status,
        ...(status === 'ok' ? { output } : { error: output }),
      });
    }
    return out;
  }

  /**
   * The run's result from the `result` line (decided on `is_error`, not `subtype`: an API
   * failure arrives as `subtype: "success"` with `is_error: true`), or a failure when none came.
   */
  runResult(exit: { exitCode: number | null; signal: string | null; stderrTail: string }): RunResult {
    const r = this.result;
    const external = this.sessionId ? { sessionId: this.sessionId } : undefined;
    for (const d of (Array.isArray(r?.permission_denials) ? r.permission_denials : []) as Obj[]) {
      const id = String(d.tool_use_id ?? '');
      if (!this.denials.some((x) => x.toolUseId === id))
        this.denials.push({
          toolName: String(d.tool_name ?? '?'),
          toolUseId: id,
          reason: 'denied by the permission mode',
        });
    }
    if (!r) {
      return {
        status: 'failed',
        error: {
          code: 'no_result',
          message:
            `claude ended without a result line (exit ${exit.exitCode ?? exit.signal}): ` +
            `${exit.stderrTail.trim().slice(-500) || 'no stderr'}`,
        },
        ...(external ? { external } : {}),
      };
    }
    const usage = (r.usage ?? {}) as Obj;
    const n = (x: unknown) => (typeof x === 'number' ? x : 0);
    const common = {
      usage: {
        inputTokens: n(usage.input_tokens) + n(usage.cache_creation_input_tokens) + n(usage.cache_read_input_tokens),
        outputTokens: n(usage.output_tokens),
        ...(typeof r.total_cost_usd === 'number' ? { costUsd: r.total_cost_usd } : {}),
        ...(typeof r.num_turns === 'number' ? { turns: r.num_turns } : {}),
      },
      ...(external ? { external } : {}),
      permissionDenials: this.denials,
      harness: { name: 'claude-code', version: this.version ?? null },
    };
    if (r.is_error === true) {
      const errors = Array.isArray(r.errors) ? (r.errors as unknown[]).map(String) : [];
      const message =
        (typeof r.result === 'string' && r.result) ||
        errors.join('; ') ||
        `claude reported an error (${String(r.subtype)})`;
      return {
        status: 'failed',
        error: {
          code: String(r.subtype === 'success' ? (r.terminal_reason ?? 'api_error') : r.subtype),
          message,
          data: {
            subtype: String(r.subtype ?? ''),
            terminalReason: String(r.terminal_reason ?? ''),
            apiErrorStatus: typeof r.api_error_status === 'number' ? r.api_error_status : null,
          },
        },
        ...common,
      };
    }
    return {
      status: 'completed',
      output: { parts: [{ type: 'text', text: typeof r.result === 'string' ? r.result : '' }] },
      ...common,
    };
  }
}
