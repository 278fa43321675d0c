import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
import { Readable, Writable } from 'node:stream';
import {
  client,
  ndJsonStream,
  PROTOCOL_VERSION,
  RequestError,
  type McpServer,
  type RequestPermissionRequest,
  type SessionNotification,
} from '@agentclientprotocol/sdk';
import {
  defineRunner,
  eventText,
  RpcError,
  z,
  claudeEnv,
  gatewayAccess,
  hasAccess,
  killTree,
  proxyEnv,
  type UpdateInput,
} from 'paddock/sdk';
import { acpOutcome, acpPermissionAction, acpRequestedScope } from './permission.js';

type Update = SessionNotification['update'];

/** A path the agent names, as a path relative to the run workspace (the host's path policy decides the rest). */
function workspacePath(root: string, path: string): string {
  const rel = isAbsolute(path) ? relative(root, path) : path;
  if (rel.startsWith('..') || isAbsolute(rel))
    throw RequestError.invalidParams({ path }, 'paddock: only paths inside the run workspace are served');
  return rel;
}

/** The fields of an object that are set (an update's absent fields leave what was known). */
function definedFields(o: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null));
}

/** One ACP `session/update` as run updates (unknown kinds kept as `log`). */
export function mapAcpUpdate(u: Update): UpdateInput[] {
  switch (u.sessionUpdate) {
    case 'agent_message_chunk':
      return u.content.type === 'text'
        ? [{ kind: 'message.delta', ...(u.messageId ? { messageId: u.messageId } : {}), text: u.content.text }]
        : [{ kind: 'log', level: 'info', message: `agent sent ${u.content.type} content` }];
    case 'agent_thought_chunk':
      return [
        {
          kind: 'log',
          level: 'debug',
          message: `thought: ${u.content.type === 'text' ? u.content.text : u.content.type}`,
        },
      ];
    case 'tool_call':
      return [
        {
          kind: 'tool.started',
          toolCallId: u.toolCallId,
          name: u.kind ?? 'other',
          title: u.title,
          ...(u.rawInput !== undefined ? { input: u.rawInput } : {}),
        },
      ];
    case 'tool_call_update':
      if (u.status === 'completed' || u.status === 'failed')
        return [
          {
            kind: 'tool.finished',
            toolCallId: u.toolCallId,
            status: u.status === 'completed' ? 'ok' : 'error',
            ...(u.rawOutput !== undefined ? { output: u.rawOutput } : {}),
          },
        ];
      return [];
    case 'plan':
      return [
        {
          kind: 'progress',
          message: `plan: ${u.entries.map((e) => `${e.status === 'completed' ? '✓' : '·'} ${e.content}`).join('; ')}`,
        },
      ];
    default:
      return [
        {
          kind: 'log',
          level: 'debug',
          message: `acp: ${u.sessionUpdate}`,
          data: u as unknown as Record<string, unknown>,
        },
      ];
  }
}

/**
 * ACP: starts the configured agent in the run sandbox and acts as its client. The session is
 * loaded from host state when the agent can load sessions; the agent's HOME is the session's
 * folder so its own session files survive between runs.
 */
export const acpRunner = defineRunner({
  manifest: { name: 'acp', version: '0.1.0' },
  configSchema: z.strictObject({
    command: z
      .string()
      .min(1)
      .describe('The ACP agent to start (absolute path, or a name on PATH inside the sandbox).'),
    args: z.array(z.string()).default([]),
    env: z
      .record(z.string(), z.string())
      .default({})
      .describe('Literal environment for the agent (no secrets: the configuration refuses them).'),
    modelGateway: z
      .enum(['none', 'anthropic', 'openai'])
      .default('none')
      .describe(
        'Give the agent the host gateway as its model API (base URL + the run token as key), e.g. anthropic ' +
          'for the Claude Code ACP adapter.',
      ),
    model: z.string().optional().describe('Granted model id the agent should use (default: the first granted).'),
    mode: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Session mode to select (session/set_mode) once the session is set up, when the agent offers it; e.g. ' +
          '"default" for the Claude Code ACP adapter, whose own default "auto" lets a classifier decide the ' +
          'permissions it would otherwise ask the host about.',
      ),
  }),
  async run(event, binding, ctx) {
    const { config } = binding;
    const root = binding.workspace?.root ?? process.cwd();
    const agentHome = join(binding.workspace?.session ?? process.env.HOME ?? root, 'home');
    mkdirSync(agentHome, { recursive: true });
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: agentHome,
      TMPDIR: process.env.TMPDIR ?? '/tmp',
      LANG: 'C.UTF-8',
      ...proxyEnv(),
      ...(binding.workspace?.session ? { PADDOCK_SESSION_DIR: binding.workspace.session } : {}),
      ...config.env,
    };
    const token = process.env.PADDOCK_RUN_TOKEN;
    if (config.modelGateway !== 'none') {
      const access = gatewayAccess(binding, config.model, `acp with modelGateway "${config.modelGateway}"`);
      if (!hasAccess(access)) return access;
      const { model } = access;
      if (config.modelGateway === 'anthropic') {
        // What Claude Code (under any adapter) needs: the gateway, the run token, the granted model for every tier.
        Object.assign(
          env,
          claudeEnv({
            path: env.PATH!,
            home: agentHome,
            tmp: env.TMPDIR!,
            baseUrl: access.gateway.anthropicBaseUrl,
            token: access.token,
            model,
          }),
          { ANTHROPIC_MODEL: model, ANTHROPIC_DEFAULT_SONNET_MODEL: model, ANTHROPIC_DEFAULT_OPUS_MODEL: model },
        );
      } else
        Object.assign(env, {
          OPENAI_BASE_URL: access.gateway.openaiBaseUrl,
          OPENAI_API_KEY: access.token,
          OPENAI_MODEL: model,
        });
    }
    const child = spawn(config.command, config.args, {
      cwd: root,
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    let stderrTail = '';
    child.stderr.on('data', (chunk: Buffer) => (stderrTail = (stderrTail + chunk.toString('utf8')).slice(-4000)));
    const exited = new Promise<{ code: number | null; signal: string | null; error?: string }>((resolve) => {
      child.once('error', (e) => resolve({ code: null, signal: null, error: e.message }));
      child.once('exit', (code, signal) => resolve({ code, signal }));
    });

    const canRead = binding.hostRequests.includes('fs/read');
    const canWrite = binding.hostRequests.includes('fs/write');
    const canAsk = binding.hostRequests.includes('approval/request');
    let replaying = false;
    let text = '';
    // What each tool call said of itself so far: a permission request may name only the call's id (ACP's
    // `toolCall` there is an update), its kind, title and input having come with `session/update`.
    const toolCalls = new Map<string, Record<string, unknown>>();
    const denied = new Set<string>();
    const app = client()
      .onNotification('session/update', ({ params }) => {
        if (replaying) return; // history replayed by session/load is not news
        const u = params.update;
        if (u.sessionUpdate === 'tool_call' || u.sessionUpdate === 'tool_call_update') {
          toolCalls.set(u.toolCallId, { ...toolCalls.get(u.toolCallId), ...definedFields(u) });
          // A call the host denied is finished already (denied, with the reason): not again as failed.
          if (denied.has(u.toolCallId) && u.sessionUpdate === 'tool_call_update') return;
        }
        if (params.update.sessionUpdate === 'agent_message_chunk' && params.update.content.type === 'text')
          text += params.update.content.text;
        for (const update of mapAcpUpdate(params.update)) ctx.emit(update);
      })
      .onRequest('session/request_permission', async ({ params }) => {
        // Every permission the agent asks for is the host's to decide (docs/approvals.md, "Harness bridges"): as an
        // approval when the binding grants approval/request, denied otherwise.
        const known = toolCalls.get(params.toolCall.toolCallId);
        const asked: RequestPermissionRequest = known
          ? {
              ...params,
              toolCall: { ...known, ...definedFields(params.toolCall) } as RequestPermissionRequest['toolCall'],
            }
          : params;
        const answer = canAsk
          ? await ctx.approval
              .request(acpPermissionAction(asked, root), acpRequestedScope(asked))
              .catch((e: unknown) => ({
                decision: 'denied' as const,
                reason: e instanceof Error ? e.message : String(e),
              }))
          : { decision: 'denied' as const, reason: 'the binding does not grant approval requests' };
        if (answer.decision !== 'approved') {
          denied.add(params.toolCall.toolCallId);
          ctx.emit({
            kind: 'tool.finished',
            toolCallId: params.toolCall.toolCallId,
            status: 'denied',
            error: `permission denied: ${answer.reason ?? 'by the host'}`,
          });
        }
        return acpOutcome(params, answer);
      })
      .onRequest('fs/read_text_file', async ({ params }) => {
        if (!canRead) throw RequestError.methodNotFound('fs/read_text_file');
        try {
          const { content } = await ctx.fs.read(workspacePath(root, params.path));
          const lines = content.split('\n');
          const start = (params.line ?? 1) - 1;
          return {
            content:
              params.line || params.limit
                ? lines.slice(start, params.limit ? start + params.limit : undefined).join('\n')
                : content,
          };
        } catch (e) {
          throw e instanceof RpcError ? new RequestError(-32002, e.message, e.data) : e;
        }
      })
      .onRequest('fs/write_text_file', async ({ params }) => {
        if (!canWrite) throw RequestError.methodNotFound('fs/write_text_file');
        try {
          await ctx.fs.write(workspacePath(root, params.path), params.content);
          return {};
        } catch (e) {
          throw e instanceof RpcError ? new RequestError(-32603, e.message, e.data) : e;
        }
      });
    const connection = app.connect(
      ndJsonStream(
        Writable.toWeb(child.stdin) as WritableStream<Uint8Array>,
        Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>,
      ),
    );
    const agent = connection.agent;
    const stop = async () => {
      connection.close();
      child.stdin.end();
      await killTree(child.pid, 2_000);
      await exited;
    };
    try {
      const init = await agent.request('initialize', {
        protocolVersion: PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: canRead, writeTextFile: canWrite }, terminal: false },
        clientInfo: { name: 'paddock', version: '0.1.0' },
      });
      ctx.emit({
        kind: 'log',
        level: 'info',
        message: (
          `acp agent ${init.agentInfo?.name ?? config.command} ${init.agentInfo?.version ?? ''} (protocol ` +
          `${init.protocolVersion})`
        ).trim(),
      });
      const http = init.agentCapabilities?.mcpCapabilities?.http === true;
      const servers = Object.entries(binding.gateway?.mcp ?? {});
      if (servers.length && !http)
        ctx.emit({
          kind: 'log',
          level: 'warn',
          message: 'acp: the agent does not take HTTP MCP servers; granted MCP servers are not given to it',
        });
      const mcpServers: McpServer[] =
        http && token
          ? servers.map(([name, url]) => ({
              type: 'http' as const,
              name,
              url,
              headers: [{ name: 'Authorization', value: `Bearer ${token}` }],
            }))
          : [];

      let sessionId: string | undefined;
      let modes: { currentModeId: string; availableModes: { id: string }[] } | null | undefined;
      const previous = ctx.resume?.external?.sessionId;
      if (previous && init.agentCapabilities?.loadSession) {
        replaying = true;
        try {
          ({ modes } = await agent.request('session/load', { sessionId: previous, cwd: root, mcpServers }));
          sessionId = previous;
        } catch (e) {
          ctx.emit({
            kind: 'log',
            level: 'warn',
            message: `acp: session ${previous} could not be loaded (${(e as Error).message}); starting a fresh session`,
          });
        } finally {
          replaying = false;
        }
      }
      if (!sessionId) ({ sessionId, modes } = await agent.request('session/new', { cwd: root, mcpServers }));
      if (config.mode && modes?.currentModeId !== config.mode) {
        if (modes?.availableModes.some((m) => m.id === config.mode)) {
          await agent.request('session/set_mode', { sessionId, modeId: config.mode });
          ctx.emit({ kind: 'log', level: 'info', message: `acp: session mode ${config.mode}` });
        } else
          ctx.emit({
            kind: 'log',
            level: 'warn',
            message:
              `acp: the agent offers no session mode "${config.mode}" ` +
              `(${modes?.availableModes.map((m) => m.id).join(', ') || 'no modes'}); left in its own`,
          });
      }
      // Cancelled while the session was being set up: never start the prompt.
      if (ctx.signal.aborted) return { status: 'cancelled', external: { sessionId } };
      const onCancel = () => void agent.notify('session/cancel', { sessionId: sessionId! }).catch(() => undefined);
      ctx.signal.addEventListener('abort', onCancel, { once: true });
      try {
        const { stopReason } = await agent.request('session/prompt', {
          sessionId,
          prompt: [{ type: 'text', text: eventText(event) }],
        });
        const external = { sessionId };
        if (stopReason === 'cancelled' || ctx.signal.aborted) return { status: 'cancelled', external };
        if (stopReason === 'end_turn' || stopReason === 'max_tokens')
          return { status: 'completed', output: { parts: [{ type: 'text', text }] }, external };
        return { status: 'failed', error: { code: stopReason, message: `the agent stopped: ${stopReason}` }, external };
      } finally {
        ctx.signal.removeEventListener('abort', onCancel);
      }
    } catch (error) {
      if (ctx.signal.aborted) return { status: 'cancelled' };
      const exit = await Promise.race([exited, new Promise<undefined>((r) => setTimeout(r, 100, undefined))]);
      const why = exit ? `the agent exited (${exit.error ?? exit.code ?? exit.signal})` : (error as Error).message;
      return {
        status: 'failed',
        error: { code: 'acp_error', message: `${why}${stderrTail ? `: ${stderrTail.trim().slice(-500)}` : ''}` },
      };
    } finally {
      await stop();
    }
  },
});
