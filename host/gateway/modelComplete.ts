import type { WireFormat } from './wire/index.js';

type Obj = Record<string, unknown>;
type Block =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | { type: 'tool_result'; toolUseId: string; content: string; isError?: boolean };
type Message = { role: 'user' | 'assistant'; content: string | Block[] };
type Tool = { name: string; description?: string; inputSchema: Obj };

const blocks = (m: Message): Block[] =>
  typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;

/**
 * The request body of an SDK `model/complete` in a provider's wire format (always streamed, so
 * `model/delta` can follow the text). The caller replaces `model` with the provider's name.
 */
export function toWire(format: WireFormat, params: Obj, modelId: string): Obj {
  const messages = params.messages as Message[];
  const tools = (params.tools as Tool[] | undefined) ?? [];
  const maxTokens = typeof params.maxTokens === 'number' ? params.maxTokens : 4096;
  const common = {
    model: modelId,
    stream: true,
    ...(typeof params.temperature === 'number' ? { temperature: params.temperature } : {}),
  };
  const system = typeof params.system === 'string' ? params.system : undefined;
  if (format === 'anthropic') {
    return {
      ...common,
      max_tokens: maxTokens,
      ...(system ? { system } : {}),
      messages: messages.map((m) => ({
        role: m.role,
        content: blocks(m).map((b) =>
          b.type === 'tool_result'
            ? {
                type: 'tool_result',
                tool_use_id: b.toolUseId,
                content: b.content,
                ...(b.isError ? { is_error: true } : {}),
              }
            : b,
        ),
      })),
      ...(tools.length
        ? { tools: tools.map((t) => ({ name: t.name, description: t.description ?? '', input_schema: t.inputSchema })) }
        : {}),
    };
  }
  if (format === 'chat') {
    const out: Obj[] = system ? [{ role: 'system', content: system }] : [];
    for (const m of messages) {
      const bs = blocks(m);
      const text = bs
        .filter((b) => b.type === 'text')
        .map((b) => (b as { text: string }).text)
        .join('\n');
      if (m.role === 'assistant') {
        const calls = bs.filter((b) => b.type === 'tool_use') as Extract<Block, { type: 'tool_use' }>[];
        out.push({
          role: 'assistant',
          content: text || null,
          ...(calls.length
            ? {
                tool_calls: calls.map((c) => ({
                  id: c.id,
                  type: 'function',
                  function: { name: c.name, arguments: JSON.stringify(c.input ?? {}) },
                })),
              }
            : {}),
        });
      } else {
        for (const r of bs.filter((b) => b.type === 'tool_result') as Extract<Block, { type: 'tool_result' }>[])
          out.push({ role: 'tool', tool_call_id: r.toolUseId, content: r.content });
        if (text) out.push({ role: 'user', content: text });
      }
    }
    return {
      ...common,
      max_tokens: maxTokens,
      stream_options: { include_usage: true },
      messages: out,
      ...(tools.length
        ? {
            tools: tools.map((t) => ({
              type: 'function',
              function: { name: t.name, description: t.description ?? '', parameters: t.inputSchema },
            })),
          }
        : {}),
    };
  }
  const input: Obj[] = [];
  for (const m of messages) {
    for (const b of blocks(m)) {
      if (b.type === 'text')
        input.push({
          type: 'message',
          role: m.role,
          content: [{ type: m.role === 'user' ? 'input_text' : 'output_text', text: b.text }],
        });
      else if (b.type === 'tool_use')
        input.push({ type: 'function_call', call_id: b.id, name: b.name, arguments: JSON.stringify(b.input ?? {}) });
      else input.push({ type: 'function_call_output', call_id: b.toolUseId, output: b.content });
    }
  }
  return {
    ...common,
    max_output_tokens: maxTokens,
    ...(system ? { instructions: system } : {}),
    input,
    ...(tools.length
      ? {
          tools: tools.map((t) => ({
            type: 'function',
            name: t.name,
            description: t.description ?? '',
            parameters: t.inputSchema,
          })),
        }
      : {}),
  };
}
