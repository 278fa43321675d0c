import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  claudeEnv,
  defineRunner,
  eventText,
  z,
  gatewayAccess,
  hasAccess,
  locateHarness,
  harnessExitFailure,
  runHarnessTurn,
  type RunContext,
} from 'paddock/sdk';
import { ClaudeStreamMapper, claudeArgs } from './claudeCode.js';
import { canUseToolRequest, claudeToolAction, permissionResponse, unsupportedControl } from './permission.js';
import { UserLines } from './userLines.js';

/** The Claude Code version these mappings were checked against (scripts/install-harnesses.sh pins it). */
const TESTED_VERSION = '2.1.332';

/**
 * Tools banned, when the binding does not grant approval requests, unless it names them in `allowedTools`: no Bash, no
 * file writes.
 */
const DEFAULT_BANNED = ['Bash', 'Edit', 'Write', 'NotebookEdit'];

/** A tool rule's tool name: `Bash(git diff:*)` → `Bash`. */
const toolOf = (rule: string) => rule.replace(/\(.*$/, '');

/**
 * Claude Code: one headless turn of the real CLI per run, in the run's sandbox, against the host
 * gateway (the run token is its API key), MCP tools only through the run's host endpoints, the
 * conversation's session resumed from host-owned state.
 */
export const claudeCodeRunner = defineRunner({
  // append: a message the host delivers mid-run is written to the CLI's stdin (docs/protocol.md, "Messages during a
  // run").
  manifest: { name: 'claude-code', version: '0.1.0', append: true },
  configSchema: z.strictObject({
    model: z.string().optional().describe('Granted model id to use; default: the first granted model.'),
    allowedTools: z
      .array(z.string())
      .default([])
      .describe(
        'Claude Code permission rules that run without asking, e.g. Read, Bash(git diff:*), Edit. Without approval ' +
          'requests granted, naming Bash, Edit, Write or NotebookEdit here also lifts its default ban.',
      ),
    disallowedTools: z
      .array(z.string())
      .default([])
      .describe(
        'More tools the CLI may never use (without approval requests granted, added to the default ban of Bash, ' +
          'Edit, Write, NotebookEdit).',
      ),
    permissionMode: z
      .enum(['default', 'acceptEdits', 'plan', 'dontAsk', 'bypassPermissions'])
      .optional()
      .describe(
        'Default: "default" when the binding grants approval requests (every prompt goes to the host), else ' +
          '"dontAsk" (anything not allowed is denied). bypassPermissions runs every tool: only inside the bwrap ' +
          'sandbox.',
      ),
    maxTurns: z.int().min(1).max(200).default(12),
    appendSystemPrompt: z.string().max(20_000).optional(),
  }),
  async run(event, binding, ctx) {
    const config = binding.config;
    const access = gatewayAccess(binding, config.model, 'claude-code');
    if (!hasAccess(access)) return access;
    const { gateway, token, model } = access;
    const cli = locateHarness('claude');
    if (!cli)
      return {
        status: 'failed',
        error: {
          code: 'harness_missing',
          message: 'the Claude Code CLI is not installed: run scripts/install-harnesses.sh (or put claude on PATH)',
        },
      };

    const home = process.env.HOME!;
    const tmp = process.env.TMPDIR ?? join(home, 'tmp');
    // MCP: only the run's host endpoints, authenticated by the run token (a file, not argv).
    const servers = Object.entries(gateway.mcp);
    let mcpConfigFile: string | undefined;
    if (servers.length) {
      mcpConfigFile = join(tmp, 'paddock-mcp.json');
      writeFileSync(
        mcpConfigFile,
        JSON.stringify({
          mcpServers: Object.fromEntries(
            servers.map(([id, url]) => [id, { type: 'http', url, headers: { Authorization: `Bearer ${token}` } }]),
          ),
        }),
        { mode: 0o600 },
      );
    }
    const cwd = binding.workspace?.root ?? process.cwd();
    // Skills: the project's skill folder, linked to the run's read-only copies.
    if (binding.skills.length) {
      const dir = join(cwd, '.claude', 'skills');
      mkdirSync(dir, { recursive: true });
      for (const s of binding.skills) if (s.path) symlinkSync(s.path, join(dir, s.name));
    }
    // Mounts: working folders of the CLI (--add-dir, resolved: under the process backend a mount is
    // a link whose target the CLI's permission checks would otherwise treat as outside), named to the model.
    const addDirs = binding.mounts.map((m) => realpathSync(m.path));
    const folders = binding.mounts.map((m, i) => `${addDirs[i]} (${m.readOnly ? 'read-only' : 'read-write'})`);
    const systemPrompt =
      [config.appendSystemPrompt, folders.length ? `Granted working folders: ${folders.join(', ')}.` : undefined]
        .filter(Boolean)
        .join('\n\n') || undefined;
    const allowed = [...config.allowedTools, ...servers.map(([id]) => `mcp__${id}`)];
    // With approvals granted, the CLI's permission prompts are the host's to decide (permission.ts): nothing is
    // banned up front. Without, the prompts could only be denied, so the risky tools are banned unless allowed.
    const hostPermissions = binding.hostRequests.includes('approval/request');
    const permissionMode = config.permissionMode ?? (hostPermissions ? 'default' : 'dontAsk');
    const lifted = new Set(config.allowedTools.map(toolOf));
    const disallowed = [
      ...(hostPermissions ? [] : DEFAULT_BANNED.filter((t) => !lifted.has(t))),
      ...config.disallowedTools,
    ];
    const maxTurns = Math.min(config.maxTurns, binding.limits.maxTurns ?? Number.MAX_SAFE_INTEGER);
    const env = claudeEnv({
      path: process.env.PATH ?? '/usr/bin:/bin',
      home,
      tmp,
      baseUrl: gateway.anthropicBaseUrl,
      token,
      model,
    });
    // bypassPermissions refuses to start as root unless told it is sandboxed (our sandbox is the boundary).
    if (permissionMode === 'bypassPermissions') env.IS_SANDBOX = '1';
    // Sessions live in the session's folder, kept across runs: that is what makes --resume work.
    if (binding.workspace?.session) env.CLAUDE_CONFIG_DIR = join(binding.workspace.session, 'claude');

    const prompt = eventText(event);
    const turn = async (resume: string | undefined, earlier: readonly string[] = []) => {
      const mapper = new ClaudeStreamMapper(disallowed);
      const inbox = new UserLines(prompt, earlier);
      let versionChecked = false;
      const exit = await runHarnessTurn({
        name: 'claude',
        command: cli.command,
        args: [
          ...cli.prefix,
          ...claudeArgs({
            prompt,
            model,
            permissionMode,
            allowedTools: allowed,
            disallowedTools: disallowed,
            maxTurns,
            mcpConfigFile,
            resume,
            appendSystemPrompt: systemPrompt,
            addDirs,
            hostPermissions,
          }),
        ],
        cwd,
        env,
        signal: ctx.signal,
        map: (value) => mapper.map(value),
        conversation: {
          initial: inbox.initial,
          ...(hostPermissions
            ? { answer: (value: Record<string, unknown>) => answerControl(value, ctx, cwd, mapper) }
            : {}),
          endAfter: (value) => inbox.endAfter(value),
          // Steering append: a message taken while stdin is open reaches the running conversation (the CLI folds it
          // into the running turn, or runs it as the next turn); once the run is ending it is refused (a new run).
          attach: (write) => {
            stopTaking = ctx.onMessage((event) => inbox.add(eventText(event), write));
          },
        },
        emit: (update) => ctx.emit(update),
        afterLine: () => {
          if (versionChecked || !mapper.version) return;
          versionChecked = true;
          if (!mapper.version.startsWith(TESTED_VERSION.replace(/\.\d+$/, '.')))
            ctx.emit({
              kind: 'log',
              level: 'warn',
              message:
                `claude ${mapper.version} is not the tested ${TESTED_VERSION}: its line formats may differ; ` +
                `unknown lines are kept as logs`,
            });
        },
      });
      stopTaking();
      return { mapper, exit, added: inbox.added };
    };
    let stopTaking = () => {};

    const previous = ctx.resume?.external?.sessionId;
    let { mapper, exit, added } = await turn(previous);
    if (previous && !mapper.sessionId && /No conversation found/i.test(exit.stderrTail) && !exit.cancelled) {
      // The saved session is gone (another machine, cleaned HOME): start afresh and say so.
      ctx.emit({
        kind: 'log',
        level: 'warn',
        message: `claude: session ${previous} was not found; starting a fresh session`,
      });
      // Messages the host delivered to the CLI that gave up are the new session's too: they were accepted.
      ({ mapper, exit, added } = await turn(undefined, added));
    }
    const broken = harnessExitFailure('claude', exit);
    if (broken) return broken;
    if (exit.cancelled)
      return { status: 'cancelled', ...(mapper.sessionId ? { external: { sessionId: mapper.sessionId } } : {}) };
    const result = mapper.runResult(exit);
    if (mapper.denials.length)
      ctx.emit({
        kind: 'log',
        level: 'warn',
        message:
          `claude: ${mapper.denials.length} tool call(s) denied: ` +
          `${mapper.denials.map((d) => `${d.toolName} (${d.reason})`).join('; ')}`,
      });
    return result;
  },
});

/**
 * The answer to a control request of the CLI: a permission prompt becomes the host's `approval/request` (a refusal of
 * the request itself, e.g. a rate limit, is a denial); any other control request is answered "not served".
 */
function answerControl(
  value: Record<string, unknown>,
  ctx: RunContext,
  root: string,
  mapper: ClaudeStreamMapper,
): Promise<Record<string, unknown>> | undefined {
  const prompt = canUseToolRequest(value);
  if (!prompt) {
    const unsupported = unsupportedControl(value);
    return unsupported ? Promise.resolve(unsupported) : undefined;
  }
  return ctx.approval
    .request(claudeToolAction(prompt.toolName, prompt.input, root), 'once')
    .catch((e: unknown) => ({ decision: 'denied' as const, reason: e instanceof Error ? e.message : String(e) }))
    .then((answer) => {
      // Marked before the CLI hears it: the tool's result line (which follows the answer) is then a denial.
      if (answer.decision !== 'approved' && prompt.toolUseId)
        mapper.deny(prompt.toolUseId, prompt.toolName, `denied by the host: ${answer.reason ?? 'no reason given'}`);
      return permissionResponse(prompt.requestId, prompt.input, answer);
    });
}
