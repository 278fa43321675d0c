/** A problem with one input of a stream request, in the shape of problem+json `errors` (docs/http-api.md). */
export interface StartSeqProblem {
  path: string;
  message: string;
}

/** The result of {@link parseStartSeq}: where the stream starts, or every problem of its inputs at once. */
export type StartSeq = { ok: true; afterSeq: number } | { ok: false; errors: StartSeqProblem[] };

/** The largest seq a client may name: 2^53 (a JSON number still exact at the client). */
export const MAX_START_SEQ = 2 ** 53;

function parseOne(value: unknown, path: string): { seq?: number; problem?: StartSeqProblem } {
  // Node joins a repeated header with ", " and a query parser gives a repeated key as an array: both refused.
  if (typeof value !== 'string') return { problem: { path, message: 'must be given once, as decimal digits' } };
  if (!/^[0-9]+$/.test(value)) return { problem: { path, message: 'must be decimal digits (a seq)' } };
  const digits = value.replace(/^0+(?=.)/, '');
  // Length first (2^53 has 16 digits), then BigInt: Number() rounds 2^53 + 1 down to 2^53.
  if (digits.length > 16 || BigInt(digits) > BigInt(MAX_START_SEQ))
    return { problem: { path, message: `must be at most ${MAX_START_SEQ}` } };
  return { seq: Number(digits) };
}

/**
 * Where a stream starts: after the seq in the `Last-Event-ID` header (what a reconnecting client
 * sends), else after `?after=`, else from the beginning (0). Both are checked when both are given;
 * the header wins.
 */
export function parseStartSeq(input: { lastEventId?: unknown; after?: unknown }): StartSeq {
  const header = input.lastEventId === undefined ? {} : parseOne(input.lastEventId, 'headers.last-event-id');
  const query = input.after === undefined ? {} : parseOne(input.after, 'query.after');
  const errors = [header.problem, query.problem].filter((p): p is StartSeqProblem => p !== undefined);
  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, afterSeq: header.seq ?? query.seq ?? 0 };
}
