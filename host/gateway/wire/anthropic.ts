import { eventJson, SseParser, sseEvent } from './sse.js';
import {
  blocksText,
  jsonBodyAssembler,
  num,
  splitText,
  type LastInput,
  type NormalizedReply,
  type ReplyAssembler,
  type ReplyBlock,
  type Wire,
} from './types.js';

type Obj = Record<string, unknown>;

/** Anthropic Messages (`POST /v1/messages`). */
export const anthropicWire: Wire = {
  format: 'anthropic',

  lastInput(body) {
    const messages = Array.isArray(body.messages) ? (body.messages as Obj[]) : [];
    // Claude Code puts `role: "system"` entries into messages: the last *user* entry counts.
    const last = [...messages].reverse().find((m) => m?.role === 'user');
    if (!last) return undefined;
    const content = last.content;
    if (Array.isArray(content)) {
      const results = (content as Obj[]).filter((b) => b?.type === 'tool_result');
      if (results.length > 0) {
        const alongside = blocksText((content as Obj[]).filter((b) => b?.type === 'text'));
        return {
          kind: 'tool_result',
          text: results.map((r) => blocksText(r.content)).join('\n'),
          ...(alongside ? { alongside } : {}),
        };
      }
    }
    return { kind: 'user', text: blocksText(content) } satisfies LastInput;
  },

  toolNames(body) {
    return Array.isArray(body.tools) ? (body.tools as Obj[]).map((t) => String(t?.name ?? '')).filter(Boolean) : [];
  },

  render(reply, stream, chunks) {
    const message = {
      id: reply.id,
      type: 'message',
      role: 'assistant',
      model: reply.model,
      content: reply.content,
      stop_reason: reply.stopReason,
      stop_sequence: null,
      usage: { input_tokens: reply.usage.inputTokens, output_tokens: reply.usage.outputTokens },
    };
    if (!stream) return [JSON.stringify(message)];
    const out = [
      sseEvent('message_start', {
        type: 'message_start',
        message: {
          ...message,
          content: [],
          stop_reason: null,
          usage: { input_tokens: reply.usage.inputTokens, output_tokens: 0 },
        },
      }),
    ];
    reply.content.forEach((block, index) => {
      if (block.type === 'text') {
        out.push(
          sseEvent('content_block_start', {
            type: 'content_block_start',
            index,
            content_block: { type: 'text', text: '' },
          }),
        );
        for (const piece of splitText(block.text, chunks))
          out.push(
            sseEvent('content_block_delta', {
              type: 'content_block_delta',
              index,
              delta: { type: 'text_delta', text: piece },
            }),
          );
      } else {
        out.push(
          sseEvent('content_block_start', {
            type: 'content_block_start',
            index,
            content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} },
          }),
        );
        out.push(
          sseEvent('content_block_delta', {
            type: 'content_block_delta',
            index,
            delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input ?? {}) },
          }),
        );
      }
      out.push(sseEvent('content_block_stop', { type: 'content_block_stop', index }));
    });
    out.push(
      sseEvent('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: reply.stopReason, stop_sequence: null },
        usage: { output_tokens: reply.usage.outputTokens },
      }),
    );
    out.push(sseEvent('message_stop', { type: 'message_stop' }));
    return out;
  },

  assembler(stream, onText) {
    return stream ? new AnthropicStreamAssembler(onText) : jsonBodyAssembler(fromMessage, onText);
  },

  errorBody(_status, type, message) {
    return { type: 'error', error: { type, message } };
  },
};

/** A whole JSON Messages response, normalized. */
function fromMessage(body: Obj): NormalizedReply {
  const content = (Array.isArray(body.content) ? (body.content as Obj[]) : []).flatMap((b): ReplyBlock[] =>
    b.type === 'text'
      ? [{ type: 'text', text: String(b.text ?? '') }]
      : b.type === 'tool_use'
        ? [{ type: 'tool_use', id: String(b.id), name: String(b.name), input: b.input ?? {} }]
        : [],
  );
  const usage = (body.usage ?? {}) as Obj;
  return {
    id: String(body.id ?? ''),
    model: String(body.model ?? ''),
    content,
    stopReason: String(body.stop_reason ?? 'end_turn'),
    usage: { inputTokens: inputTokens(usage), outputTokens: num(usage.output_tokens) },
  };
}

/** Input tokens including cache reads and writes (all of them are billed input). */
function inputTokens(usage: Obj): number {
  return num(usage.input_tokens) + num(usage.cache_creation_input_tokens) + num(usage.cache_read_input_tokens);
}

/** A streamed Messages response (message_start … message_stop). */
class AnthropicStreamAssembler implements ReplyAssembler {
  private readonly parser = new SseParser();
  private readonly blocks: (ReplyBlock & { json?: string })[] = [];
  private reply: NormalizedReply = {
    id: '',
    model: '',
    content: [],
    stopReason: 'end_turn',
    usage: { inputTokens: 0, outputTokens: 0 },
  };
  constructor(private readonly onText?: (t: string) => void) {}

  push(chunk: string): void {
    for (const e of this.parser.push(chunk)) {
      const data = eventJson(e);
      if (!data) continue;
      switch (data.type) {
        case 'message_start': {
          const m = (data.message ?? {}) as Obj;
          const usage = (m.usage ?? {}) as Obj;
          this.reply = {
            ...this.reply,
            id: String(m.id ?? ''),
            model: String(m.model ?? ''),
            usage: { inputTokens: inputTokens(usage), outputTokens: num(usage.output_tokens) },
          };
          break;
        }
        case 'content_block_start': {
          const b = (data.content_block ?? {}) as Obj;
          this.blocks[num(data.index)] =
            b.type === 'tool_use'
              ? { type: 'tool_use', id: String(b.id), name: String(b.name), input: {}, json: '' }
              : { type: 'text', text: String(b.text ?? '') };
          break;
        }
        case 'content_block_delta': {
          const block = this.blocks[num(data.index)];
          const d = (data.delta ?? {}) as Obj;
          if (block?.type === 'text' && d.type === 'text_delta') {
            block.text += String(d.text ?? '');
            this.onText?.(String(d.text ?? ''));
          } else if (block?.type === 'tool_use' && d.type === 'input_json_delta')
            block.json += String(d.partial_json ?? '');
          break;
        }
        case 'message_delta': {
          const d = (data.delta ?? {}) as Obj;
          const usage = (data.usage ?? {}) as Obj;
          if (typeof d.stop_reason === 'string') this.reply.stopReason = d.stop_reason;
          // message_delta usage is cumulative for the message.
          if (usage.output_tokens !== undefined) this.reply.usage.outputTokens = num(usage.output_tokens);
          if (usage.input_tokens !== undefined)
            this.reply.usage.inputTokens = Math.max(this.reply.usage.inputTokens, inputTokens(usage));
          break;
        }
      }
    }
  }

  result(): NormalizedReply {
    const content = this.blocks.filter(Boolean).map(({ json, ...block }): ReplyBlock => {
      if (block.type !== 'tool_use') return block;
      let input: unknown = {};
      try {
        input = json ? JSON.parse(json) : {};
      } catch {
        input = { _unparsed: json };
      }
      return { ...block, input };
    });
    return { ...this.reply, content };
  }
}
