import { defineRunner, eventText, z, type ParamsOf, type ResultOf } from 'paddock/sdk';

type Message = ParamsOf<'model/complete'>['messages'][number];
type Block = Exclude<Message['content'], string>[number];
type Route = { kind: 'kb'; knowledgeBase: string } | { kind: 'mcp'; server: string; tool: string };

/** A tool name a model accepts: letters, digits, `_` and `-`, at most 64. */
const toolName = (s: string) => s.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);

/** Resolve with `promise`, or reject as soon as `signal` aborts (the host call is then abandoned). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => (signal.removeEventListener('abort', onAbort), resolve(v)),
      (e: unknown) => (signal.removeEventListener('abort', onAbort), reject(e)),
    );
  });
}

/**
 * The local agent: model → tools → model, until the model stops asking for tools or `maxTurns`
 * model calls were made. Tools are the granted knowledge bases (`search_<id>`) and the allowed
 * tools of granted MCP servers (`<server>__<tool>`), all called through the host.
 */
export const localAgentRunner = defineRunner({
  manifest: { name: 'local-agent', version: '0.1.0' },
  configSchema: z.strictObject({
    model: z.string().optional().describe('Granted model id; default: the first granted model.'),
    system: z.string().max(20_000).optional().describe('System prompt.'),
    maxTurns: z.int().min(1).max(50).default(6).describe('Model calls per run.'),
    maxTokens: z.int().min(1).max(200_000).default(4096),
  }),
  async run(event, binding, ctx) {
    const { config } = binding;
    const model = config.model ?? binding.models[0]?.id;
    if (!model)
      return {
        status: 'failed',
        error: { code: 'no_model', message: 'local-agent needs a granted model (grants.models)' },
      };

    const tools: { name: string; description?: string; inputSchema: Record<string, unknown> }[] = [];
    const routes = new Map<string, Route>();
    for (const kb of binding.knowledgeBases) {
      const name = toolName(`search_${kb.id}`);
      routes.set(name, { kind: 'kb', knowledgeBase: kb.id });
      tools.push({
        name,
        description: `Search the knowledge base "${kb.name ?? kb.id}"; returns passages with their sources.`,
        inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
      });
    }
    for (const server of binding.mcpServers) {
      const listed: ResultOf<'tool/list'> = await untilAborted(ctx.tools.list(server.id), ctx.signal);
      for (const t of listed.tools) {
        const name = toolName(`${server.id}__${t.name}`);
        routes.set(name, { kind: 'mcp', server: server.id, tool: t.name });
        tools.push({ name, description: t.description, inputSchema: t.inputSchema });
      }
    }

    const messages: Message[] = [...historyMessages(binding.history), { role: 'user', content: eventText(event) }];
    const usage = { inputTokens: 0, outputTokens: 0, turns: 0 };
    let lastText = '';
    try {
      for (let turn = 1; turn <= config.maxTurns; turn++) {
        ctx.signal.throwIfAborted();
        const messageId = `turn-${turn}`;
        const reply = await untilAborted(
          ctx.model.complete(
            {
              model,
              messages,
              ...(config.system ? { system: config.system } : {}),
              ...(tools.length ? { tools } : {}),
              maxTokens: config.maxTokens,
            },
            { onDelta: (text) => ctx.emit({ kind: 'message.delta', messageId, text }) },
          ),
          ctx.signal,
        );
        usage.inputTokens += reply.usage.inputTokens ?? 0;
        usage.outputTokens += reply.usage.outputTokens ?? 0;
        usage.turns = turn;
        messages.push({ role: 'assistant', content: reply.message.content as Block[] });
        lastText = reply.message.content
          .filter((b) => b.type === 'text')
          .map((b) => (b as { text: string }).text)
          .join('');
        if (lastText)
          ctx.emit({ kind: 'message', messageId, role: 'assistant', parts: [{ type: 'text', text: lastText }] });
        const calls = reply.message.content.filter(
          (b): b is Extract<Block, { type: 'tool_use' }> => b.type === 'tool_use',
        );
        if (calls.length === 0)
          return {
            status: 'completed',
            output: { parts: [{ type: 'text', text: lastText }] },
            usage: { ...usage, model },
          };
        const results: Block[] = [];
        for (const call of calls) {
          ctx.signal.throwIfAborted();
          ctx.emit({ kind: 'tool.started', toolCallId: call.id, name: call.name, input: call.input });
          const { text, isError } = await untilAborted(runTool(ctx, routes.get(call.name), call.input), ctx.signal);
          ctx.emit({
            kind: 'tool.finished',
            toolCallId: call.id,
            status: isError ? 'error' : 'ok',
            ...(isError ? { error: text } : { output: text }),
          });
          results.push({
            type: 'tool_result',
            toolUseId: call.id,
            content: text,
            ...(isError ? { isError: true } : {}),
          });
        }
        messages.push({ role: 'user', content: results });
      }
    } catch (error) {
      if (ctx.signal.aborted) return { status: 'cancelled', usage: { ...usage, model } };
      throw error;
    }
    return {
      status: 'failed',
      error: {
        code: 'max_turns',
        message: `reached maxTurns (${config.maxTurns}) while the model still asked for tools`,
      },
      usage: { ...usage, model },
    };
  },
});

/**
 * Earlier turns the host granted (`binding.history`, oldest first) as model messages: the first
 * must be the user's (a placeholder when the window starts with an answer), and two turns of one role in a row (a
 * message whose run gave no answer) are
 * joined into one.
 */
export function historyMessages(history: { role: 'user' | 'assistant'; text: string }[]): Message[] {
  const out: { role: 'user' | 'assistant'; content: string }[] = [];
  for (const turn of history) {
    // A window that starts with an answer: models expect a user turn first.
    if (out.length === 0 && turn.role !== 'user') out.push({ role: 'user', content: '(earlier turns omitted)' });
    const last = out.at(-1);
    if (last && last.role === turn.role) last.content += `\n\n${turn.text}`;
    else out.push({ role: turn.role, content: turn.text });
  }
  return out;
}

/** One tool call through the host; failures become an error result the model can read. */
async function runTool(
  ctx: Parameters<typeof localAgentRunner.run>[2],
  route: Route | undefined,
  input: unknown,
): Promise<{ text: string; isError: boolean }> {
  if (!route) return { text: 'no such tool', isError: true };
  const args = (input && typeof input === 'object' ? input : {}) as Record<string, unknown>;
  try {
    if (route.kind === 'kb') {
      const { chunks } = await ctx.kb.retrieve(route.knowledgeBase, String(args.query ?? ''));
      return {
        text: chunks.map((c) => `[${c.source.title ?? c.source.id}] ${c.text}`).join('\n\n') || 'no results',
        isError: false,
      };
    }
    const result = await ctx.tools.call(route.server, route.tool, args);
    const text = result.content
      .map((c) => (c.type === 'text' ? String((c as { text?: unknown }).text ?? '') : `[${c.type}]`))
      .join('\n');
    return { text, isError: result.isError === true };
  } catch (error) {
    return { text: error instanceof Error ? error.message : String(error), isError: true };
  }
}
