// A test's side of Server-Sent Events: a parser that follows the WHATWG "event stream" rules
// (fields end at CR, LF or CRLF, a message at an empty line), and a client over node:http.
import { request, type IncomingHttpHeaders } from 'node:http';
import { StringDecoder } from 'node:string_decoder';

/** One dispatched message, with the names of every field line it was built from (to catch injected fields). */
export interface SseMessage {
  id: string;
  event: string;
  data: string;
  fields: string[];
}

/** Incremental parser of an event stream. */
export class SseParser {
  readonly comments: string[] = [];
  private decoder = new StringDecoder('utf8');
  private text = '';
  private lastId = '';
  private type = '';
  private data: string[] = [];
  private fields: string[] = [];

  /** Feed bytes; returns the messages they completed. */
  feed(chunk: Buffer | string): SseMessage[] {
    this.text += typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    const out: SseMessage[] = [];
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.text);
      // A CR at the very end may be the first half of a CRLF: wait for the next chunk.
      if (!m || (m[0] === '\r' && m.index === this.text.length - 1)) break;
      const line = this.text.slice(0, m.index);
      this.text = this.text.slice(m.index + m[0].length);
      const message = this.line(line);
      if (message) out.push(message);
    }
    return out;
  }

  private line(line: string): SseMessage | undefined {
    if (line === '') {
      const message =
        this.data.length > 0
          ? { id: this.lastId, event: this.type || 'message', data: this.data.join('\n'), fields: this.fields }
          : undefined;
      this.type = '';
      this.data = [];
      this.fields = [];
      return message;
    }
    if (line.startsWith(':')) {
      this.comments.push(line.slice(1));
      return undefined;
    }
    const colon = line.indexOf(':');
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    this.fields.push(name);
    if (name === 'event') this.type = value;
    else if (name === 'data') this.data.push(value);
    else if (name === 'id' && !value.includes('\0')) this.lastId = value;
    return undefined;
  }
}

/** How a test client's stream ended. */
export type SseClose = 'end' | 'aborted' | 'error';

/** A connected SSE client. */
export interface SseClient {
  status: number;
  headers: IncomingHttpHeaders;
  messages: SseMessage[];
  parser: SseParser;
  /** Bytes received so far. */
  bytes: () => number;
  /** Resolves when the response ends (cleanly: 'end') or the connection breaks. */
  closed: Promise<SseClose>;
  /** Resolves once `n` messages have arrived (rejects if the stream closes first). */
  waitForCount(n: number): Promise<void>;
  /** Cut the connection. */
  destroy(): void;
}

/** Open an SSE stream at `url` (a loopback test server); resolves once the status line and headers arrived. */
export function openSse(
  url: string,
  options: { lastEventId?: string; headers?: Record<string, string>; onMessage?: (m: SseMessage) => void } = {},
): Promise<SseClient> {
  return new Promise((resolve, reject) => {
    const req = request(url, {
      agent: false,
      headers: {
        accept: 'text/event-stream',
        ...(options.lastEventId !== undefined ? { 'last-event-id': options.lastEventId } : {}),
        ...options.headers,
      },
    });
    req.on('error', reject);
    req.on('response', (res) => {
      const parser = new SseParser();
      const messages: SseMessage[] = [];
      let bytes = 0;
      let ended: SseClose | undefined;
      const waiters: { n: number; resolve: () => void; reject: (e: Error) => void }[] = [];
      const settle = () => {
        for (const w of [...waiters]) {
          if (messages.length >= w.n) w.resolve();
          else if (ended) w.reject(new Error(`stream closed (${ended}) after ${messages.length} of ${w.n} messages`));
          else continue;
          waiters.splice(waiters.indexOf(w), 1);
        }
      };
      let close: (how: SseClose) => void = () => undefined;
      const closed = new Promise<SseClose>((r) => (close = r));
      const done = (how: SseClose) => {
        if (ended) return;
        ended = how;
        close(how);
        settle();
      };
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        for (const m of parser.feed(chunk)) {
          messages.push(m);
          options.onMessage?.(m);
        }
        settle();
      });
      res.on('end', () => done('end'));
      res.on('aborted', () => done('aborted'));
      res.on('error', () => done('error'));
      res.on('close', () => done(res.complete ? 'end' : 'aborted'));
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        messages,
        parser,
        bytes: () => bytes,
        closed,
        waitForCount: (n) =>
          new Promise<void>((resolve, reject) => {
            waiters.push({ n, resolve, reject });
            settle();
          }),
        destroy: () => req.destroy(),
      });
    });
    req.end();
  });
}
