// The body of a plain-HTTP request through the egress proxy, read whole so the host can scan what leaves before any
// byte of it does. Bounded both ways: the bytes the runner sends, and what a compressed body inflates to.
import type { IncomingMessage } from 'node:http';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';

/** Largest plain-HTTP request body the proxy reads and scans (larger ones are refused, 413). */
export const MAX_SCANNED_BODY_BYTES = 8 * 1024 * 1024;
/** Largest size a compressed body may inflate to for its scan (larger ones are refused). */
export const MAX_INFLATED_BODY_BYTES = 32 * 1024 * 1024;

/** Most body bytes one run's egress proxy holds for scanning at once, over all its connections. */
export const MAX_BUFFERED_BODY_BYTES_PER_RUN = 32 * 1024 * 1024;

/** Bytes one run's proxy may hold at once (an outside attack held 8 MiB on each of hundreds of connections). */
export class ByteBudget {
  private held = 0;
  constructor(readonly limit: number) {}

  /** Hold `n` more bytes if the budget allows; false (nothing held) when it does not. */
  take(n: number): boolean {
    if (this.held + n > this.limit) return false;
    this.held += n;
    return true;
  }

  /** Give back `n` held bytes. */
  give(n: number): void {
    this.held = Math.max(0, this.held - n);
  }
}

/** A body read for scanning, its bytes held in `budget` until the caller gives them back; or why it was not kept. */
export type ReadBody = { raw: Buffer } | { refused: string; status: number };

/**
 * Read a request's body whole (at most {@link MAX_SCANNED_BODY_BYTES}, and what the run's `budget` allows). A body
 * over either is read to its end and dropped, not cut off: the answer then reaches the client on a connection it can
 * use again. The caller decodes and scans it in one synchronous step ({@link decodeForScan}), so one inflated copy
 * exists at a time, and gives `raw.length` back to the budget when the request is done.
 */
export function readScannableBody(req: IncomingMessage, budget: ByteBudget): Promise<ReadBody> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over: { refused: string; status: number } | undefined;
    const drop = (why: { refused: string; status: number }) => {
      over = why;
      budget.give(chunks.reduce((n, c) => n + c.length, 0));
      chunks.length = 0;
    };
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (over) return;
      if (size > MAX_SCANNED_BODY_BYTES)
        drop({ status: 413, refused: `a plain-HTTP body over ${MAX_SCANNED_BODY_BYTES} bytes cannot be scanned` });
      else if (!budget.take(chunk.length))
        drop({
          status: 503,
          refused: `the run's requests already hold ${budget.limit} bytes of bodies to scan: retry when one is done`,
        });
      else chunks.push(chunk);
    });
    req.on('error', (error) => {
      if (!over) drop({ status: 400, refused: 'the request broke off' });
      reject(error);
    });
    req.on('end', () => resolve(over ?? { raw: Buffer.concat(chunks) }));
  });
}

/** One content coding undone, with how many input bytes its decoder took (zlib's sync calls with `info`). */
type Undone = { buffer: Buffer; engine: { bytesWritten: number } };
const LIMIT = { maxOutputLength: MAX_INFLATED_BODY_BYTES, info: true };
const DECODERS: Record<string, (input: Buffer) => Undone> = {
  gzip: (input) => gunzipSync(input, LIMIT) as unknown as Undone,
  'x-gzip': (input) => gunzipSync(input, LIMIT) as unknown as Undone,
  deflate: (input) => inflateSync(input, LIMIT) as unknown as Undone,
  br: (input) => brotliDecompressSync(input, LIMIT) as unknown as Undone,
};

/**
 * The text the scan reads: the body as sent and every layer of it undone of its content encodings (last applied
 * first), as UTF-8 (bytes that are no valid UTF-8 become U+FFFD one by one, so an ASCII secret among them still reads
 * as itself). A layer with bytes after its compressed stream is refused: a decoder stops at the stream's end, and
 * what follows would leave unread (an outside attack sent `deflate("hi") + "k=<secret>"`).
 */
export function decodeForScan(
  raw: Buffer,
  contentEncoding: string | undefined,
): { text: string } | { refused: string } {
  const codings = (contentEncoding ?? '')
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
  const layers = [raw];
  try {
    for (const coding of codings.reverse()) {
      const decode = DECODERS[coding];
      if (!decode) return { refused: `content-encoding ${JSON.stringify(coding)} cannot be scanned` };
      const input = layers.at(-1)!;
      const { buffer, engine } = decode(input);
      if (engine.bytesWritten !== input.length)
        return { refused: `the body has ${input.length - engine.bytesWritten} bytes after its ${coding} stream` };
      layers.push(buffer);
    }
  } catch (error) {
    return { refused: `the body does not decode as its content-encoding says (${(error as Error).message})` };
  }
  return { text: layers.map((layer) => layer.toString('utf8')).join('\n') };
}
