import { eventJson, SseParser } from './sse.js';
import {
  blocksText,
  jsonBodyAssembler,
  num,
  splitText,
  type NormalizedReply,
  type ReplyAssembler,
  type ReplyBlock,
  type Wire,
} from './types.js';

type Obj = Record<string, unknown>;

const finishReason = (reply: NormalizedReply) =>
  reply.stopReason === 'tool_use' ? 'tool_calls' : reply.stopReason === 'max_tokens' ? 'length' : 'stop';
const stopReason = (finish: unknown) =>
  finish === 'tool_calls' ? 'tool_use' : finish === 'length' ? 'max_tokens' : 'end_turn';

function parseArgs(text: string): unknown {
  try {
    return text ? JSON.parse(text) : {};
  } catch {
    return { _unparsed: text };
  }
}

/** A whole JSON Chat Completions answer, normalized. */
function fromCompletion(body: Obj): NormalizedReply {
  const choice = ((body.choices as Obj[] | undefined)?.[0] ?? {}) as Obj;
  const message = (choice.message ?? {}) as Obj;
  const content: ReplyBlock[] =
    typeof message.content === 'string' && message.content ? [{ type: 'text', text: message.content }] : [];
  for (const c of (message.tool_calls as Obj[] | undefined) ?? []) {
    const f = (c.function ?? {}) as Obj;
    content.push({
      type: 'tool_use',
      id: String(c.id),
      name: String(f.name),
      input: parseArgs(String(f.arguments ?? '')),
    });
  }
  const usage = (body.usage ?? {}) as Obj;
  return {
    id: String(body.id ?? ''),
    model: String(body.model ?? ''),
    content,
    stopReason: stopReason(choice.finish_reason),
    usage: { inputTokens: num(usage.prompt_tokens), outputTokens: num(usage.completion_tokens) },
  };
}

/** OpenAI Chat Completions (`POST /v1/chat/completions`). */
export const chatWire: Wire = {
  format: 'chat',

  lastInput(body) {
    const messages = Array.isArray(body.messages) ? (body.messages as Obj[]) : [];
    const last = [...messages].reverse().find((m) => m?.role === 'user' || m?.role === 'tool');
    if (!last) return undefined;
    return { kind: last.role === 'tool' ? 'tool_result' : 'user', text: blocksText(last.content) };
  },

  toolNames(body) {
    return Array.isArray(body.tools)
      ? (body.tools as Obj[])
          .map((t) => String((t?.function as Obj | undefined)?.name ?? t?.name ?? ''))
          .filter(Boolean)
      : [];
  },

  render(reply, stream, chunks) {
    const created = Math.floor(Date.now() / 1000);
    const text = reply.content
      .filter((b) => b.type === 'text')
      .map((b) => (b as { text: string }).text)
      .join('');
    const calls = reply.content.filter((b) => b.type === 'tool_use') as Extract<ReplyBlock, { type: 'tool_use' }>[];
    const toolCalls = calls.map((c, index) => ({
      index,
      id: c.id,
      type: 'function',
      function: { name: c.name, arguments: JSON.stringify(c.input ?? {}) },
    }));
    const usage = {
      prompt_tokens: reply.usage.inputTokens,
      completion_tokens: reply.usage.outputTokens,
      total_tokens: reply.usage.inputTokens + reply.usage.outputTokens,
    };
    const base = { id: reply.id, created, model: reply.model };
    if (!stream) {
      return [
        JSON.stringify({
          ...base,
          object: 'chat.completion',
          choices: [
            {
              index: 0,
              message: {
                role: 'assistant',
                content: text || null,
                ...(calls.length ? { tool_calls: toolCalls.map(({ index: _i, ...c }) => c) } : {}),
              },
              finish_reason: finishReason(reply),
            },
          ],
          usage,
        }),
      ];
    }
    const chunk = (delta: Obj, finish: string | null = null) =>
      `data: ${JSON.stringify({
        ...base,
        object: 'chat.completion.chunk',
        choices: [{ index: 0, delta, finish_reason: finish }],
      })}\n\n`;
    const out = [chunk({ role: 'assistant', content: '' })];
    if (text) for (const piece of splitText(text, chunks)) out.push(chunk({ content: piece }));
    if (toolCalls.length) out.push(chunk({ tool_calls: toolCalls }));
    out.push(chunk({}, finishReason(reply)));
    out.push(
      `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [], usage })}\n\n`,
      'data: [DONE]\n\n',
    );
    return out;
  },

  assembler(stream, onText) {
    if (!stream) return jsonBodyAssembler(fromCompletion, onText);
    const parser = new SseParser();
    let id = '';
    let model = '';
    let text = '';
    let finish: unknown;
    const calls: { id: string; name: string; args: string }[] = [];
    const usage = { inputTokens: 0, outputTokens: 0 };
    return {
      push(c) {
        for (const e of parser.push(c)) {
          const data = eventJson(e);
          if (!data) continue;
          id ||= String(data.id ?? '');
          model ||= String(data.model ?? '');
          const u = data.usage as Obj | undefined;
          if (u) Object.assign(usage, { inputTokens: num(u.prompt_tokens), outputTokens: num(u.completion_tokens) });
          for (const choice of (data.choices as Obj[] | undefined) ?? []) {
            const delta = (choice.delta ?? {}) as Obj;
            if (typeof delta.content === 'string' && delta.content) {
              text += delta.content;
              onText?.(delta.content);
            }
            for (const tc of (delta.tool_calls as Obj[] | undefined) ?? []) {
              const i = num(tc.index);
              const f = (tc.function ?? {}) as Obj;
              calls[i] ??= { id: '', name: '', args: '' };
              if (tc.id) calls[i]!.id = String(tc.id);
              if (f.name) calls[i]!.name = String(f.name);
              calls[i]!.args += String(f.arguments ?? '');
            }
            if (choice.finish_reason) finish = choice.finish_reason;
          }
        }
      },
      result(): NormalizedReply {
        const content: ReplyBlock[] = [
          ...(text ? [{ type: 'text' as const, text }] : []),
          ...calls
            .filter(Boolean)
            .map((c) => ({ type: 'tool_use' as const, id: c.id, name: c.name, input: parseArgs(c.args) })),
        ];
        return { id, model, content, stopReason: stopReason(finish), usage: { ...usage } };
      },
    } satisfies ReplyAssembler;
  },

  errorBody(_status, type, message) {
    return { error: { type, message, code: type } };
  },
};
