import { eventJson, SseParser, sseEvent } from './sse.js';
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

/** Output items of a Responses answer for a normalized reply. */
function outputItems(reply: NormalizedReply): Obj[] {
  return reply.content.map((block, i) =>
    block.type === 'text'
      ? {
          id: `msg_${reply.id}_${i}`,
          type: 'message',
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: block.text, annotations: [] }],
        }
      : {
          id: `fc_${reply.id}_${i}`,
          type: 'function_call',
          status: 'completed',
          call_id: block.id,
          name: block.name,
          arguments: typeof block.input === 'string' ? block.input : JSON.stringify(block.input ?? {}),
        },
  );
}

function usageOf(reply: NormalizedReply): Obj {
  const { inputTokens, outputTokens } = reply.usage;
  return {
    input_tokens: inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: inputTokens + outputTokens,
  };
}

/** Normalize a Responses answer object. */
function fromResponse(response: Obj): NormalizedReply {
  const content = (Array.isArray(response.output) ? (response.output as Obj[]) : []).flatMap((item): ReplyBlock[] => {
    if (item.type === 'message') return [{ type: 'text', text: blocksText(item.content) }];
    if (item.type === 'function_call') {
      let input: unknown = {};
      try {
        input = JSON.parse(String(item.arguments ?? '{}'));
      } catch {
        input = { _unparsed: item.arguments };
      }
      return [{ type: 'tool_use', id: String(item.call_id ?? item.id), name: String(item.name), input }];
    }
    return [];
  });
  const usage = (response.usage ?? {}) as Obj;
  const stopReason = content.some((b) => b.type === 'tool_use')
    ? 'tool_use'
    : response.status === 'incomplete'
      ? 'max_tokens'
      : 'end_turn';
  return {
    id: String(response.id ?? ''),
    model: String(response.model ?? ''),
    content,
    stopReason,
    usage: { inputTokens: num(usage.input_tokens), outputTokens: num(usage.output_tokens) },
  };
}

/** OpenAI Responses (`POST /v1/responses`). */
export const responsesWire: Wire = {
  format: 'responses',

  lastInput(body) {
    if (typeof body.input === 'string') return { kind: 'user', text: body.input };
    const items = Array.isArray(body.input) ? (body.input as Obj[]) : [];
    const last = [...items]
      .reverse()
      .find(
        (i) =>
          i?.type === 'function_call_output' ||
          i?.type === 'custom_tool_call_output' ||
          ((i?.type === 'message' || i?.type === undefined) && i?.role === 'user'),
      );
    if (!last) return undefined;
    if (last.type === 'function_call_output' || last.type === 'custom_tool_call_output')
      return { kind: 'tool_result', text: blocksText(last.output) };
    return { kind: 'user', text: blocksText(last.content) };
  },

  toolNames(body) {
    return Array.isArray(body.tools)
      ? (body.tools as Obj[])
          .map((t) => String(t?.name ?? (t?.function as Obj | undefined)?.name ?? ''))
          .filter(Boolean)
      : [];
  },

  render(reply, stream, chunks) {
    const created_at = Math.floor(Date.now() / 1000);
    const items = outputItems(reply);
    const response = {
      id: reply.id,
      object: 'response',
      created_at,
      status: 'completed',
      model: reply.model,
      output: items,
      usage: usageOf(reply),
    };
    if (!stream) return [JSON.stringify(response)];
    let seq = 0;
    const ev = (type: string, data: Obj) => sseEvent(type, { type, sequence_number: seq++, ...data });
    const out = [
      ev('response.created', { response: { ...response, status: 'in_progress', output: [], usage: null } }),
      ev('response.in_progress', { response: { ...response, status: 'in_progress', output: [], usage: null } }),
    ];
    items.forEach((item, output_index) => {
      if (item.type === 'message') {
        const text = String(((item.content as Obj[])[0] as Obj).text);
        out.push(
          ev('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', content: [] } }),
        );
        out.push(
          ev('response.content_part.added', {
            item_id: item.id,
            output_index,
            content_index: 0,
            part: { type: 'output_text', text: '', annotations: [] },
          }),
        );
        for (const delta of splitText(text, chunks))
          out.push(ev('response.output_text.delta', { item_id: item.id, output_index, content_index: 0, delta }));
        out.push(ev('response.output_text.done', { item_id: item.id, output_index, content_index: 0, text }));
        out.push(
          ev('response.content_part.done', {
            item_id: item.id,
            output_index,
            content_index: 0,
            part: { type: 'output_text', text, annotations: [] },
          }),
        );
      } else {
        out.push(
          ev('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', arguments: '' } }),
        );
        out.push(
          ev('response.function_call_arguments.delta', { item_id: item.id, output_index, delta: item.arguments }),
        );
        out.push(
          ev('response.function_call_arguments.done', { item_id: item.id, output_index, arguments: item.arguments }),
        );
      }
      out.push(ev('response.output_item.done', { output_index, item }));
    });
    out.push(ev('response.completed', { response }));
    return out;
  },

  assembler(stream, onText) {
    if (!stream) return jsonBodyAssembler(fromResponse, onText);
    const parser = new SseParser();
    let final: NormalizedReply | undefined;
    let partial: NormalizedReply = {
      id: '',
      model: '',
      content: [],
      stopReason: 'end_turn',
      usage: { inputTokens: 0, outputTokens: 0 },
    };
    return {
      push(chunk) {
        for (const e of parser.push(chunk)) {
          const data = eventJson(e);
          if (!data) continue;
          if (data.type === 'response.output_text.delta') onText?.(String(data.delta ?? ''));
          else if (data.type === 'response.created')
            partial = { ...partial, ...fromResponse((data.response ?? {}) as Obj), content: [] };
          else if (
            data.type === 'response.completed' ||
            data.type === 'response.incomplete' ||
            data.type === 'response.failed'
          )
            final = fromResponse((data.response ?? {}) as Obj);
        }
      },
      result: () => final ?? partial,
    } satisfies ReplyAssembler;
  },

  errorBody(_status, type, message) {
    return { error: { type, message, code: type } };
  },
};
