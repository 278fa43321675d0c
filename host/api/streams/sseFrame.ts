// SSE framing (https://html.spec.whatwg.org/multipage/server-sent-events.html#parsing-an-event-stream):
// a field ends at CR, LF or CRLF and a message at an empty line, so no field value may hold CR or LF —
// one that did could end the message early or start a forged field (`\n\ndata: forged`).
import type { RawEvent } from '../../state/streamReads.js';

/** Response headers of an event stream (`x-accel-buffering: no` keeps nginx from holding messages back). */
export const SSE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
};

/** The heartbeat: a comment line, which every client ignores (it keeps proxies from timing the stream out). */
export const HEARTBEAT = ': hb\n\n';

/** Event type names as they go on the `event:` line: the store's own names are all of this shape. */
const EVENT_NAME = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * Make JSON text one safe `data:` line. In valid JSON a raw CR or LF can only be whitespace between
 * tokens (a string may not hold one unescaped), so a space replaces it without changing the value;
 * U+2028/U+2029 may stand raw inside strings: escaped, for line-splitting clients that treat them
 * as line ends.
 */
export function oneLineJson(json: string): string {
  return json
    .replace(/[\r\n]/g, ' ')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/** The stored event as JSON (the shape of `StoredEvent`), built around its stored data text without reparsing it. */
export function storedEventJson(e: RawEvent): string {
  return (
    `{"id":${JSON.stringify(e.id)},"sessionId":${JSON.stringify(e.sessionId)},"seq":${e.seq},` +
    `"type":${JSON.stringify(e.type)},"runId":${JSON.stringify(e.runId)},"at":${JSON.stringify(e.at)},` +
    `"data":${e.dataJson}}`
  );
}

/** One SSE message for a stored event: `id: <seq>`, `event: <type>`, `data: <stored event JSON>`. */
export function sseMessage(e: RawEvent): string {
  if (!Number.isSafeInteger(e.seq) || e.seq < 1) throw new Error(`event ${e.id} has no valid seq`);
  // A type outside the store's shape (impossible through Store.append) goes as the default `message`.
  const event = EVENT_NAME.test(e.type) ? e.type : 'message';
  return `id: ${e.seq}\nevent: ${event}\ndata: ${oneLineJson(storedEventJson(e))}\n\n`;
}
