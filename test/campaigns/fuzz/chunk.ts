// One piece of a fuzz case: bytes a runner writes to the host, and what the protocol says the host must make of it.

/**
 * What docs/protocol.md says a message does to the run: `ok` the run goes on (a refused request is an answer, an
 * empty line is skipped), `fatal` fails it with `protocol_error`, `quota` fails it with `quota_exceeded`, `unsure`
 * where the contract does not say (the campaign then accepts `protocol_error` too).
 */
export type Effect = 'ok' | 'fatal' | 'quota' | 'unsure';

/** Bytes to write, with placeholders the player fills at play time ({@link RUN_ID}, {@link NEXT_SEQ}, …). */
export interface Chunk {
  bytes: Buffer;
  effect: Effect;
  /** What the generator made, for the violation report. */
  note: string;
  /** Write the line in pieces at these byte offsets, with a turn of the event loop between (a partial line). */
  splitAt?: number[];
}

/** Stands for the active run's id inside a JSON string. */
export const RUN_ID = '__FUZZ_RUN_ID__';
/** Stands for the next update's seq (a bare number); each occurrence takes the next one. */
export const NEXT_SEQ = '"__FUZZ_NEXT_SEQ__"';

/** Stands for the id of the host's request being answered (`initialize` or `run`), a bare JSON value. */
export const REQUEST_ID = '"__FUZZ_REQUEST_ID__"';

/** A message as one NDJSON line. */
export function line(message: unknown, effect: Effect, note: string): Chunk {
  return { bytes: Buffer.from(`${JSON.stringify(message)}\n`), effect, note };
}

/** Raw bytes (already ending in a newline, or not: a partial line). */
export function raw(bytes: Buffer | string, effect: Effect, note: string): Chunk {
  return { bytes: typeof bytes === 'string' ? Buffer.from(bytes) : bytes, effect, note };
}

/** Replace every `from` in `buf` with what `to(i)` gives for the i-th occurrence. */
export function fillPlaceholder(buf: Buffer, from: string, to: (i: number) => string): Buffer {
  const needle = Buffer.from(from);
  const parts: Buffer[] = [];
  let at = 0;
  let n = 0;
  for (let hit = buf.indexOf(needle); hit >= 0; hit = buf.indexOf(needle, at)) {
    parts.push(buf.subarray(at, hit), Buffer.from(to(n++)));
    at = hit + needle.length;
  }
  if (n === 0) return buf;
  parts.push(buf.subarray(at));
  return Buffer.concat(parts);
}
