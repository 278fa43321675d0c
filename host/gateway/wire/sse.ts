/** One server-sent event. */
export interface SseEvent {
  event?: string;
  data: string;
}

/** Encode one server-sent event (`event:` line only when named). */
export function sseEvent(event: string | undefined, data: unknown): string {
  const text = typeof data === 'string' ? data : JSON.stringify(data);
  return `${event ? `event: ${event}\n` : ''}${text
    .split('\n')
    .map((line) => `data: ${line}`)
    .join('\n')}\n\n`;
}

/** Incremental SSE parser: push text chunks, get the events they complete. */
export class SseParser {
  private buffer = '';
  private event: string | undefined;
  private data: string[] = [];

  push(chunk: string): SseEvent[] {
    this.buffer += chunk;
    const out: SseEvent[] = [];
    let newline: number;
    while ((newline = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, newline).replace(/\r$/, '');
      this.buffer = this.buffer.slice(newline + 1);
      if (line === '') {
        if (this.data.length > 0) out.push({ event: this.event, data: this.data.join('\n') });
        this.event = undefined;
        this.data = [];
      } else if (line.startsWith('data:')) this.data.push(line.slice(5).replace(/^ /, ''));
      else if (line.startsWith('event:')) this.event = line.slice(6).trim();
      // `id:`, `retry:` and comments carry nothing we need.
    }
    return out;
  }

  /** Events completed by the end of the stream (a last event without its blank line). */
  end(): SseEvent[] {
    return this.push('\n\n');
  }
}

/** Parse an event's data as JSON, or undefined (`[DONE]`, garbage). */
export function eventJson(e: SseEvent): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(e.data);
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
