// Server-Sent Events over fetch: the API's streams need the bearer header, which EventSource cannot send. Parses
// the WHATWG event-stream format and resumes after a drop with Last-Event-ID, as the API documents.
import type { Api } from './api.js';

/** One message of a stream. */
export interface StreamMessage {
  id: string;
  event: string;
  data: string;
}

/** Incremental event-stream parser: feed text, get the messages it completed. */
export class EventStreamParser {
  private buffer = '';
  private lastId = '';
  private type = '';
  private data: string[] = [];

  /** The last id the stream set (what a resume sends as Last-Event-ID). */
  get id(): string {
    return this.lastId;
  }

  /** Feed decoded text; returns the messages it completed. */
  feed(text: string): StreamMessage[] {
    this.buffer += text;
    const out: StreamMessage[] = [];
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buffer);
      // A CR at the very end may be half of a CRLF: wait for more.
      if (!m || (m[0] === '\r' && m.index === this.buffer.length - 1)) break;
      const line = this.buffer.slice(0, m.index);
      this.buffer = this.buffer.slice(m.index + m[0].length);
      const message = this.line(line);
      if (message) out.push(message);
    }
    return out;
  }

  private line(line: string): StreamMessage | undefined {
    if (line === '') {
      const message =
        this.data.length > 0
          ? { id: this.lastId, event: this.type || 'message', data: this.data.join('\n') }
          : undefined;
      this.type = '';
      this.data = [];
      return message;
    }
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (name === 'event') this.type = value;
    else if (name === 'data') this.data.push(value);
    else if (name === 'id' && !value.includes('\0')) this.lastId = value;
    return undefined;
  }
}

/** How a followed stream ended. */
export type StreamEnd = { reason: 'ended' } | { reason: 'stopped' } | { reason: 'failed'; error: unknown };

/**
 * Follow the stream at `path`: every message to `onMessage`, in order. A dropped connection is resumed (with
 * Last-Event-ID, after a pause that grows to 10 s); the stream ends when the server ends it cleanly or `signal`
 * aborts. A refusal (4xx) ends it as failed, with the API's error.
 */
export async function followStream(
  api: Api,
  path: string,
  onMessage: (message: StreamMessage) => void,
  signal: AbortSignal,
): Promise<StreamEnd> {
  const parser = new EventStreamParser();
  let pause = 500;
  while (!signal.aborted) {
    try {
      const headers: Record<string, string> = { accept: 'text/event-stream' };
      if (parser.id) headers['last-event-id'] = parser.id;
      const res = await api.fetch(path, { headers, signal });
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return { reason: 'ended' };
        for (const message of parser.feed(value)) onMessage(message);
        pause = 500;
      }
    } catch (error) {
      if (signal.aborted) break;
      const status = (error as { status?: number }).status;
      if (status !== undefined && status >= 400 && status < 500 && status !== 429) return { reason: 'failed', error };
      await new Promise((resolve) => setTimeout(resolve, pause));
      pause = Math.min(pause * 2, 10_000);
    }
  }
  return { reason: 'stopped' };
}
