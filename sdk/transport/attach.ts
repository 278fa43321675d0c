import type { Readable, Writable } from 'node:stream';
import { ErrorCodes } from '../protocol/errorCodes.js';
import { LineReader } from './ndjson.js';
import type { JsonRpcPeer } from './peer.js';

/** Options of {@link attachPeer}. */
export interface AttachOptions {
  maxLineBytes: number;
  /** Called with the byte length of each inbound chunk (for quotas). */
  onBytes?(bytes: number): void;
  /** Called with each inbound line's byte length just before it is handed to the peer. */
  onLine?(bytes: number): void;
  /** When it returns false, inbound bytes are still counted but no longer parsed. */
  shouldRead?(): boolean;
  /** Called once when the input ends or errors; the peer is not closed for you. */
  onEnd?(error?: Error): void;
}

/** Feed NDJSON lines from `input` into `peer`; an oversized line is a violation and stops reading. */
export function attachPeer(
  peer: JsonRpcPeer,
  input: Readable,
  onViolation: (code: number, reason: string) => void,
  options: AttachOptions,
): () => void {
  const reader = new LineReader(options.maxLineBytes, {
    onLine: (line) => {
      options.onLine?.(line.length);
      peer.receiveLine(line);
    },
    onOverflow: (bytes) =>
      onViolation(
        ErrorCodes.QuotaExceeded,
        `a line exceeded the ${options.maxLineBytes}-byte limit (${bytes} bytes without a newline)`,
      ),
  });
  let ended = false;
  const onData = (chunk: Buffer) => {
    options.onBytes?.(chunk.length);
    if (options.shouldRead?.() !== false) reader.push(chunk);
  };
  const onEnd = (error?: Error) => {
    if (ended) return;
    ended = true;
    options.onEnd?.(error);
  };
  const onClose = () => onEnd();
  input.on('data', onData);
  input.once('end', onClose);
  input.once('close', onClose);
  input.once('error', onEnd);
  return () => {
    input.off('data', onData);
    input.off('end', onClose);
    input.off('close', onClose);
    input.off('error', onEnd);
  };
}

/** A send function for {@link JsonRpcPeer} that writes to `output` and swallows writes after it ended. */
export function lineWriter(output: Writable): (line: string) => void {
  output.on('error', () => {
    // EPIPE after the other side went away; the connection's end handler reports that.
  });
  return (line) => {
    if (!output.writableEnded && !output.destroyed) output.write(line);
  };
}
