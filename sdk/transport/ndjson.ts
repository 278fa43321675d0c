/** Default cap on one NDJSON line, in bytes (a line is one JSON-RPC message). */
export const DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024;

const NEWLINE = 0x0a;

/** What a {@link LineReader} reports. */
export interface LineReaderEvents {
  /** One complete line, without its newline. Empty lines are skipped. */
  onLine(line: Buffer): void;
  /**
   * A line grew past the cap. By default no more lines are delivered after this; return
   * `'skip'` to drop that one line and go on with the next (lenient readers of harness output).
   */
  onOverflow(bytesSoFar: number): void | 'skip';
}

/**
 * Splits a byte stream into newline-delimited lines with a hard cap on line length, so a peer
 * that never sends a newline cannot make us buffer without bound. Works on bytes, so a UTF-8
 * character split across chunks is reassembled before decoding.
 */
export class LineReader {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private overflowed = false;
  private skipping = false;

  constructor(
    private readonly maxLineBytes: number,
    private readonly events: LineReaderEvents,
  ) {}

  /** Feed the next chunk. */
  push(chunk: Buffer): void {
    if (this.overflowed) return;
    let start = 0;
    while (start < chunk.length) {
      const nl = chunk.indexOf(NEWLINE, start);
      if (this.skipping) {
        if (nl === -1) return;
        this.skipping = false;
        start = nl + 1;
        continue;
      }
      if (nl === start && this.pendingBytes === 0) {
        start += 1; // an empty line: skip it without allocating
        continue;
      }
      const end = nl === -1 ? chunk.length : nl;
      const piece = chunk.subarray(start, end);
      if (this.pendingBytes + piece.length > this.maxLineBytes) {
        const bytes = this.pendingBytes + piece.length;
        this.pending = [];
        this.pendingBytes = 0;
        if (this.events.onOverflow(bytes) === 'skip') {
          if (nl === -1) {
            this.skipping = true;
            return;
          }
          start = nl + 1;
          continue;
        }
        this.overflowed = true;
        return;
      }
      if (nl === -1) {
        this.pending.push(piece);
        this.pendingBytes += piece.length;
        return;
      }
      const line = this.pending.length === 0 ? piece : Buffer.concat([...this.pending, piece]);
      this.pending = [];
      this.pendingBytes = 0;
      start = nl + 1;
      if (line.length > 0 && !(line.length === 1 && line[0] === 0x0d)) this.events.onLine(line);
      if (this.overflowed) return;
    }
  }

  /** Bytes of an unterminated line still held (a stream that ends here lost them). */
  get bufferedBytes(): number {
    return this.pendingBytes;
  }
}

/** Serialize one message as an NDJSON line. JSON.stringify never emits a raw newline. */
export function serializeMessage(message: unknown): string {
  return `${JSON.stringify(message)}\n`;
}
