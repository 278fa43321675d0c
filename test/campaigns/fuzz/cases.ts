// A protocol fuzz case from its seed: what the fuzzing runner sends, in order, and the outcomes the contract allows.
import type { OutcomeStatus } from '../../../host/process/outcome.js';
import { intBetween, pick, seededRandom } from '../lib/random.js';
import { line, raw, REQUEST_ID, type Chunk } from './chunk.js';
import {
  badUpdate,
  deepMessage,
  emptyLine,
  garbage,
  hostRequest,
  hugeLine,
  invalidUtf8InString,
  responseToNothing,
  updateFlood,
  validUpdate,
} from './messages.js';

/** How the runner ends its part: an answer to `run`, or its process going away or silent. */
export type Ending =
  | 'completed'
  | 'failed'
  | 'cancelled'
  | 'errorAnswer'
  | 'badResult'
  | 'doubleResult'
  | 'close'
  | 'partialClose'
  | 'hang';

/** How the runner meets `initialize`. */
export type Handshake = 'valid' | 'badAnswer' | 'silent' | 'close';

/** One case: everything the fuzzing runner does, and what the host may make of it. */
export interface FuzzCase {
  seed: number;
  /** Sent as soon as the runner starts, before `initialize` is answered. */
  early: Chunk[];
  handshake: Handshake;
  /** The answer to `initialize` when `handshake` is `badAnswer`. */
  initAnswer?: Chunk;
  /** Sent once `run` arrived, before the ending. */
  body: Chunk[];
  ending: Ending;
  /** The ending's bytes (for the answers). */
  endChunks: Chunk[];
  /** Outcome statuses docs/protocol.md allows for this case. */
  expected: OutcomeStatus[];
}

/** The fuzz limits' `maxUpdates` (a flood goes past it). */
export const FUZZ_MAX_UPDATES = 400;

type Rand = () => number;

/** The case of `seed`: the same seed gives the same case on every machine. */
export function makeCase(seed: number): FuzzCase {
  const rand = seededRandom(seed);
  const handshake = weighted(rand, { valid: 94.5, badAnswer: 4, silent: 0.5, close: 1 });
  const early = rand() < 0.08 ? times(rand, 1, 3, () => earlyChunk(rand)) : [];
  const body: Chunk[] = [];
  let updates = 0;
  for (let i = intBetween(rand, 0, 8); i > 0; i--) {
    const chunk = bodyChunk(rand);
    if (chunk.note === 'update') updates += 1;
    body.push(splitSometimes(rand, chunk));
  }
  if (rand() < 0.03) body.push(updateFlood(rand, FUZZ_MAX_UPDATES, updates));
  const ending = weighted(rand, {
    completed: 48,
    failed: 8,
    cancelled: 5,
    errorAnswer: 5,
    badResult: 8,
    doubleResult: 4,
    close: 12,
    partialClose: 8,
    hang: 1,
  });
  const initAnswer = handshake === 'badAnswer' ? badInitAnswer(rand) : undefined;
  const endChunks = endingChunks(rand, ending);
  return {
    seed,
    early,
    handshake,
    initAnswer,
    body,
    ending,
    endChunks,
    expected: expectedStatuses(handshake, early, body, ending),
  };
}

/**
 * The statuses the contract allows: the first message that fails the run decides it ("the first reason wins"),
 * else the handshake or the ending does; a message the contract leaves open (`unsure`) before that may also fail it
 * with `protocol_error`.
 */
export function expectedStatuses(
  handshake: Handshake,
  early: readonly Chunk[],
  body: readonly Chunk[],
  ending: Ending,
): OutcomeStatus[] {
  const allowed = new Set<OutcomeStatus>();
  const decide = (chunks: readonly Chunk[]): boolean => {
    for (const c of chunks) {
      if (c.effect === 'unsure') allowed.add('protocol_error');
      if (c.effect === 'fatal' || c.effect === 'quota') {
        allowed.add(c.effect === 'quota' ? 'quota_exceeded' : 'protocol_error');
        return true;
      }
    }
    return false;
  };
  if (decide(early)) return [...allowed];
  if (handshake !== 'valid') {
    allowed.add({ badAnswer: 'protocol_error', silent: 'timed_out', close: 'crashed' }[handshake] as OutcomeStatus);
    return [...allowed];
  }
  if (decide(body)) return [...allowed];
  for (const s of ENDING_STATUSES[ending]) allowed.add(s);
  return [...allowed];
}

const ENDING_STATUSES: Record<Ending, OutcomeStatus[]> = {
  completed: ['completed'],
  failed: ['failed'],
  cancelled: ['cancelled'],
  // "runner answered run with error …": the run failed.
  errorAnswer: ['failed'],
  // An invalid result is an invalid message.
  badResult: ['protocol_error'],
  // The first answer decides; the second answers nothing.
  doubleResult: ['completed'],
  close: ['crashed'],
  // A line cut by the exit: the exit, or the cut line read as not JSON, whichever the host sees first.
  partialClose: ['crashed', 'protocol_error'],
  hang: ['timed_out'],
};

function endingChunks(rand: Rand, ending: Ending): Chunk[] {
  const answer = (body: object, note: string) =>
    raw(`{"jsonrpc":"2.0","id":${REQUEST_ID},${JSON.stringify(body).slice(1, -1)}}\n`, 'ok', note);
  const completed = answer(
    { result: { status: 'completed', output: { parts: [{ type: 'text', text: 'ok' }] } } },
    'ok',
  );
  switch (ending) {
    case 'completed':
      return [completed];
    case 'failed':
      return [
        answer({ result: { status: 'failed', error: { code: 'fuzz', message: 'failed on purpose' } } }, 'failed'),
      ];
    case 'cancelled':
      return [answer({ result: { status: 'cancelled' } }, 'cancelled')];
    case 'errorAnswer':
      return [answer({ error: { code: pick(rand, [-32603, -1, 12345]), message: 'runner blew up' } }, 'error')];
    case 'badResult':
      return [answer({ result: pick(rand, [{ status: 'done' }, null, 'ok', [], { status: 7 }]) }, 'invalid result')];
    case 'doubleResult':
      return [completed, answer({ result: { status: 'failed', error: { code: 'x', message: 'late' } } }, 'again')];
    case 'partialClose':
      return [raw(`{"jsonrpc":"2.0","id":${REQUEST_ID},"result":{"stat`, 'ok', 'a cut line')];
    default:
      return [];
  }
}

function badInitAnswer(rand: Rand): Chunk {
  const ok = { protocolVersion: 1, runner: { name: 'fuzz', version: '0' }, capabilities: { cancel: true } };
  const body = pick(rand, [
    { result: { ...ok, protocolVersion: pick(rand, [0, 2, 99, '1', null]) } },
    { result: { ...ok, runner: pick(rand, [null, {}, 'fuzz']) } },
    { result: pick(rand, [null, 1, 'ok', []]) },
    { error: { code: -32010, message: 'no such version' } },
  ]);
  return raw(`{"jsonrpc":"2.0","id":${REQUEST_ID},${JSON.stringify(body).slice(1, -1)}}\n`, 'fatal', 'bad init');
}

function earlyChunk(rand: Rand): Chunk {
  return weighted(rand, { garbage: 1, hostRequest: 1, responseToNothing: 1, emptyLine: 1 }) === 'garbage'
    ? garbage(rand)
    : pick(rand, [() => responseToNothing(rand), () => hostRequest(rand), emptyLine])();
}

function bodyChunk(rand: Rand): Chunk {
  switch (
    weighted(rand, {
      update: 25,
      request: 25,
      garbage: 8,
      badUpdate: 6,
      deep: 5,
      huge: 1,
      utf8: 5,
      response: 6,
      empty: 5,
      duplicateInit: 2,
    })
  ) {
    case 'update':
      return validUpdate(rand);
    case 'request':
      return hostRequest(rand);
    case 'garbage':
      return garbage(rand);
    case 'badUpdate':
      return badUpdate(rand);
    case 'deep':
      return deepMessage(rand);
    case 'huge':
      return hugeLine(rand);
    case 'utf8':
      return invalidUtf8InString();
    case 'response':
      return responseToNothing(rand);
    case 'empty':
      return emptyLine();
    default:
      // The initialize answer again, for an id already answered.
      return line({ jsonrpc: '2.0', id: 1, result: { protocolVersion: 1 } }, 'unsure', 'initialize answered twice');
  }
}

/** Sometimes write a chunk in pieces (a partial line, then the rest). */
function splitSometimes(rand: Rand, chunk: Chunk): Chunk {
  if (rand() >= 0.2 || chunk.bytes.length < 2) return chunk;
  const cuts = times(rand, 1, 4, () => intBetween(rand, 1, chunk.bytes.length - 1)).sort((a, b) => a - b);
  return { ...chunk, splitAt: [...new Set(cuts)] };
}

function times<T>(rand: Rand, lo: number, hi: number, make: () => T): T[] {
  return Array.from({ length: intBetween(rand, lo, hi) }, make);
}

/** A key of `weights`, picked with probability proportional to its weight. */
function weighted<K extends string>(rand: Rand, weights: Record<K, number>): K {
  const entries = Object.entries(weights) as [K, number][];
  let r = rand() * entries.reduce((sum, [, w]) => sum + w, 0);
  for (const [key, w] of entries) {
    r -= w;
    if (r < 0) return key;
  }
  return entries[entries.length - 1]![0];
}
