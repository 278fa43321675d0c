// A Server-Sent Events parser, written plainly after the WHATWG "event stream" rules: a field ends at CR, LF or
// CRLF, a message at an empty line, `:` starts a comment, one space after the colon is dropped.

/** One message of an event stream. */
export interface SseMessage {
  /** The last `id:` seen so far in the stream (SSE keeps it across messages). */
  id: string;
  /** `event:`, or `message` when the message named none. */
  event: string;
  /** The `data:` lines, joined by newlines. */
  data: string;
}

/** Feed it text as it arrives; it returns the messages each chunk completed. */
export class SseParser {
  private buffer = '';
  private lastId = '';
  private event = '';
  private data: string[] = [];

  /** The messages completed by `chunk` (a half-received message waits for the next chunk). */
  feed(chunk: string): SseMessage[] {
    this.buffer += chunk;
    const messages: SseMessage[] = [];
    for (;;) {
      const end = /\r\n|\r|\n/.exec(this.buffer);
      // A CR as the last character may be the first half of a CRLF: wait for more.
      if (!end || (end[0] === '\r' && end.index === this.buffer.length - 1)) break;
      const line = this.buffer.slice(0, end.index);
      this.buffer = this.buffer.slice(end.index + end[0].length);
      const message = this.line(line);
      if (message) messages.push(message);
    }
    return messages;
  }

  private line(line: string): SseMessage | undefined {
    if (line === '') {
      const message =
        this.data.length > 0
          ? { id: this.lastId, event: this.event || 'message', data: this.data.join('\n') }
          : undefined;
      this.event = '';
      this.data = [];
      return message;
    }
    if (line.startsWith(':')) return undefined; // a comment: paddock's heartbeat
    const colon = line.indexOf(':');
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (name === 'event') this.event = value;
    else if (name === 'data') this.data.push(value);
    else if (name === 'id' && !value.includes('\0')) this.lastId = value;
    return undefined;
  }
}
