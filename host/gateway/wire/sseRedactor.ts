import type { Redactor } from '../../secrets/redactor.js';
import { eventJson, SseParser, sseEvent } from './sse.js';

type Obj = Record<string, unknown>;

/** A streamed string inside a delta event, and the stream (content block, choice, tool call) it continues. */
interface DeltaField {
  key: string;
  get(): string;
  set(text: string): void;
}

const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

function field(key: string, holder: Obj, name: string): DeltaField {
  return { key, get: () => holder[name] as string, set: (text) => void (holder[name] = text) };
}

/**
 * The streamed strings of one event, in any of the three wires: Anthropic `content_block_delta`
 * (text, tool-input JSON, thinking), Responses `*.delta`, Chat Completions `choices[].delta`
 * (content, reasoning, tool-call arguments).
 */
function deltaFields(data: Obj): DeltaField[] {
  const out: DeltaField[] = [];
  if (data.type === 'content_block_delta' && isObj(data.delta)) {
    for (const name of ['text', 'partial_json', 'thinking'])
      if (typeof data.delta[name] === 'string') out.push(field(`a${String(data.index)}:${name}`, data.delta, name));
  } else if (typeof data.type === 'string' && data.type.endsWith('.delta') && typeof data.delta === 'string') {
    out.push(
      field(
        `r${data.type}:${String(data.item_id)}:${String(data.output_index)}:${String(data.content_index)}`,
        data,
        'delta',
      ),
    );
  } else if (Array.isArray(data.choices)) {
    for (const choice of data.choices) {
      if (!isObj(choice) || !isObj(choice.delta)) continue;
      const delta = choice.delta;
      for (const name of ['content', 'reasoning_content'])
        if (typeof delta[name] === 'string') out.push(field(`c${String(choice.index)}:${name}`, delta, name));
      for (const call of Array.isArray(delta.tool_calls) ? delta.tool_calls : []) {
        if (isObj(call) && isObj(call.function) && typeof call.function.arguments === 'string')
          out.push(field(`c${String(choice.index)}:t${String(call.index)}`, call.function, 'arguments'));
      }
    }
  }
  return out;
}

/** Does this event end its choices' streams (a Chat Completions chunk with a finish reason)? */
const endsStreams = (data: Obj) =>
  Array.isArray(data.choices) && data.choices.some((c) => isObj(c) && c.finish_reason != null);

/**
 * Redacts a provider's SSE answer event by event, for the harness: each streamed string (a text
 * block, a tool call's argument JSON, …) is one chunk-safe stream over its deltas, so a secret a
 * provider splits across two events is caught; every other string of an event is redacted on its
 * own. A stream's held-back end goes out as one more delta event of the same shape before the next
 * event that is not a delta (a block's stop, the message's end), or with a chunk that finishes it.
 */
export function sseRedactor(redactor: Redactor): { push(chunk: string): string; end(): string } {
  const parser = new SseParser();
  const open = new Map<string, { stream: ReturnType<Redactor['stream']>; event: string | undefined; template: Obj }>();

  const flush = (key: string): string => {
    const entry = open.get(key)!;
    open.delete(key);
    const tail = entry.stream.end();
    if (!tail) return '';
    const clone = structuredClone(entry.template);
    for (const f of deltaFields(clone)) f.set(f.key === key ? tail : '');
    return sseEvent(entry.event, clone);
  };
  const flushAll = () => [...open.keys()].map(flush).join('');

  const handle = (event: string | undefined, raw: string): string => {
    const data = eventJson({ event, data: raw });
    if (!data) return flushAll() + sseEvent(event, redactor.text(raw));
    const fields = deltaFields(data);
    if (fields.length === 0) return flushAll() + sseEvent(event, redactor.value(data));
    const texts = fields.map((f) => f.get());
    for (const f of fields) f.set('');
    const safe = redactor.value(data);
    const ending = endsStreams(safe);
    deltaFields(safe).forEach((f, i) => {
      let entry = open.get(f.key);
      if (!entry) open.set(f.key, (entry = { stream: redactor.stream(), event, template: safe }));
      entry.template = safe;
      let text = entry.stream.push(texts[i]!);
      if (ending) {
        text += entry.stream.end();
        open.delete(f.key);
      }
      f.set(text);
    });
    return sseEvent(event, safe);
  };

  return {
    push: (chunk) =>
      parser
        .push(chunk)
        .map((e) => handle(e.event, e.data))
        .join(''),
    end: () =>
      parser
        .end()
        .map((e) => handle(e.event, e.data))
        .join('') + flushAll(),
  };
}
