// Random and mutated runner → host messages for the protocol fuzz, each labelled with its effect per docs/protocol.md.
import { HOST_METHOD_NAMES } from '../../../sdk/protocol/methods.js';
import { intBetween, pick } from '../lib/random.js';
import { line, NEXT_SEQ, raw, RUN_ID, type Chunk } from './chunk.js';

type Rand = () => number;

/** The campaign's line limit (the host's `maxLineBytes` in the fuzz limits): "huge" lines go past it. */
export const FUZZ_MAX_LINE_BYTES = 256 * 1024;

/** A valid update of the active run with the next seq. */
export function validUpdate(rand: Rand): Chunk {
  const update = pick(rand, [
    { kind: 'message.delta', text: randomText(rand, 40) },
    { kind: 'progress', message: randomText(rand, 20) },
    { kind: 'log', level: 'info', message: randomText(rand, 20), data: nested(rand, intBetween(rand, 0, 20)) },
  ]);
  return withSeq({ jsonrpc: '2.0', method: 'run/update', params: { runId: RUN_ID, seq: 0, update } }, 'ok', 'update');
}

/** A run/update the host must refuse: wrong seq, another run, an unknown kind, params of the wrong type. */
export function badUpdate(rand: Rand): Chunk {
  const which = intBetween(rand, 0, 6);
  const ok = { kind: 'progress', message: 'x' };
  const n = (params: unknown, note: string) =>
    line({ jsonrpc: '2.0', method: 'run/update', params }, 'fatal', `bad update: ${note}`);
  switch (which) {
    case 0:
      return n({ runId: RUN_ID, seq: intBetween(rand, 2, 1e6), update: ok }, 'seq skips ahead');
    case 1:
      return n({ runId: RUN_ID, seq: pick(rand, [0, -1, 1.5, '1', null]), update: ok }, 'seq of a wrong type');
    case 2:
      return n({ runId: `run_${randomText(rand, 8)}`, seq: 1, update: ok }, 'another run');
    case 3:
      return n({ runId: RUN_ID, seq: 1, update: { kind: pick(rand, ['teleport', '', 42]) } }, 'unknown kind');
    case 4:
      return n(pick(rand, [null, 'params', 7, { runId: RUN_ID }]), 'params of a wrong type');
    case 5:
      return n({ runId: RUN_ID, seq: 1, update: { kind: 'message.delta', text: pick(rand, [5, null, {}]) } }, 'text');
    default:
      return n({ runId: pick(rand, [5, null, true]), seq: 1, update: ok }, 'runId of a wrong type');
  }
}

/**
 * A request to the host, valid or mutated: known and unknown methods, params of wrong types, another run's id, odd
 * but legal ids (reused, negative, huge, strings). Always answered, and the run goes on (docs/protocol.md: "Refusals
 * are answers, not crashes").
 */
export function hostRequest(rand: Rand): Chunk {
  const method = rand() < 0.75 ? pick(rand, HOST_METHOD_NAMES) : pick(rand, ['run', 'initialize', 'shutdown', 'x/y']);
  const id = pick(rand, [1, 2, 3, 0, -7, 2 ** 53 - 1, 'a', '', randomText(rand, 30), intBetween(rand, 1, 1e9)]);
  const params = pick(rand, [
    { runId: RUN_ID, key: randomText(rand, 10), value: nested(rand, 10) },
    { runId: RUN_ID, path: pick(rand, ['../../etc/passwd', '/etc/shadow', 'a\u0000b', 'x'.repeat(5000)]) },
    { runId: `run_${randomText(rand, 6)}`, key: 'k' },
    { runId: RUN_ID, model: 'none', messages: [] },
    { runId: 42 },
    {},
    [1, 2, 3],
    undefined,
  ]);
  return line({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) }, 'ok', `request ${method}`);
}

/** A request or notification nested past 64 levels: a request is answered -32004, anything else fails the run. */
export function deepMessage(rand: Rand): Chunk {
  const depth = intBetween(rand, 65, 5000);
  const value = `${'['.repeat(depth)}${']'.repeat(depth)}`;
  if (rand() < 0.5) {
    const text = `{"jsonrpc":"2.0","id":9,"method":"state/get","params":{"runId":"${RUN_ID}","key":${value}}}\n`;
    return raw(text, 'ok', `request nested ${depth} deep`);
  }
  const text = `{"jsonrpc":"2.0","method":"run/update","params":{"runId":"${RUN_ID}","seq":1,"update":${value}}}\n`;
  return raw(text, 'fatal', `notification nested ${depth} deep`);
}

/** A line longer than the host's line limit (it never buffers more than that). */
export function hugeLine(rand: Rand): Chunk {
  const size = FUZZ_MAX_LINE_BYTES + intBetween(rand, 1, 3 * FUZZ_MAX_LINE_BYTES);
  const body = `{"jsonrpc":"2.0","method":"run/update","params":{"runId":"${RUN_ID}","seq":1,"update":{"kind":"log",`;
  const text = `${body}"message":"${'A'.repeat(size)}"}}}\n`;
  return raw(text, 'quota', `line of ${text.length} bytes`);
}

/** Bytes that are not one JSON-RPC message: not JSON, invalid UTF-8, scalars, truncated JSON, envelopes. */
export function garbage(rand: Rand): Chunk {
  const which = intBetween(rand, 0, 9);
  switch (which) {
    case 0:
      return raw(Buffer.concat([randomBytes(rand, intBetween(rand, 1, 200)), Buffer.from('\n')]), 'unsure', 'bytes');
    case 1:
      return raw(Buffer.from([0xff, 0xfe, 0x7b, 0x0a]), 'fatal', 'invalid UTF-8 outside a string');
    case 2:
      return raw(`${pick(rand, ['1', '"s"', 'null', 'true', '3.5e9'])}\n`, 'fatal', 'a JSON scalar');
    case 3:
      return raw(`${JSON.stringify(validRequestish()).slice(0, intBetween(rand, 1, 30))}\n`, 'fatal', 'truncated');
    case 4:
      return line([validRequestish()], 'fatal', 'a batch');
    case 5:
      return line({ jsonrpc: pick(rand, ['1.0', 2, null]), method: 'run/update' }, 'fatal', 'wrong jsonrpc');
    case 6:
      return line({ jsonrpc: '2.0', method: `x/${randomText(rand, 5)}`, params: {} }, 'fatal', 'unknown notification');
    case 7:
      return line({ jsonrpc: '2.0', id: { a: 1 }, method: 'state/get' }, 'fatal', 'id of a wrong type');
    case 8:
      return line({ jsonrpc: '2.0', id: 1, result: 1, error: { code: 1 } }, 'fatal', 'result and error');
    default:
      return raw('Loading model weights... done!\n', 'fatal', 'a log line on stdout');
  }
}

/** A string field with invalid UTF-8 inside it (Node reads it as U+FFFD): an ordinary, refused request. */
export function invalidUtf8InString(): Chunk {
  const head = Buffer.from(`{"jsonrpc":"2.0","id":77,"method":"state/get","params":{"runId":"${RUN_ID}","key":"`);
  return raw(Buffer.concat([head, Buffer.from([0xc3, 0x28, 0xe2, 0x82]), Buffer.from('"}}\n')]), 'ok', 'bad UTF-8');
}

/** An answer to a request the host never sent (or already had answered). */
export function responseToNothing(rand: Rand): Chunk {
  // Never an id the host may be waiting on (it numbers its requests 1, 2, 3…): that would be an answer.
  const id = pick(rand, [-1, 'x', 'fuzz-1', 1e9 + intBetween(rand, 1, 1e6)]);
  const body = rand() < 0.5 ? { result: nested(rand, 3) } : { error: { code: -32000, message: 'no' } };
  return line({ jsonrpc: '2.0', id, ...body }, 'unsure', `answer to nothing (id ${JSON.stringify(id)})`);
}

/** An empty line, which the framing skips. */
export function emptyLine(): Chunk {
  return raw('\n', 'ok', 'empty line');
}

/** Valid updates in a row (a flood) after `already` ones: past the host's `maxUpdates` it is a quota. */
export function updateFlood(rand: Rand, maxUpdates: number, already: number): Chunk {
  const room = maxUpdates - already;
  const count = rand() < 0.5 ? intBetween(rand, 1, room) : room + intBetween(rand, 1, 200);
  const one = `{"jsonrpc":"2.0","method":"run/update","params":{"runId":"${RUN_ID}","seq":${NEXT_SEQ},"update":`;
  const text = `${one}{"kind":"message.delta","text":"f"}}}\n`.repeat(count);
  return raw(text, count > room ? 'quota' : 'ok', `${count} updates in a row`);
}

function withSeq(message: object, effect: Chunk['effect'], note: string): Chunk {
  const text = JSON.stringify(message).replace('"seq":0', `"seq":${NEXT_SEQ}`);
  return raw(`${text}\n`, effect, note);
}

function validRequestish() {
  return { jsonrpc: '2.0', id: 5, method: 'state/get', params: { runId: RUN_ID, key: 'k' } };
}

/** A random value nested up to `depth` levels. */
function nested(rand: Rand, depth: number): unknown {
  let value: unknown = pick(rand, [1, 'x', null, true, -0.5, '\u202e\u0000']);
  for (let i = 0; i < depth; i++) value = rand() < 0.5 ? [value] : { [randomText(rand, 3)]: value };
  return value;
}

function randomText(rand: Rand, max: number): string {
  const alphabet = 'abcxyz019 _-é漢\u{1F600}\\"\n\t';
  let s = '';
  const n = intBetween(rand, 1, max);
  for (let i = 0; i < n; i++) s += [...alphabet][intBetween(rand, 0, [...alphabet].length - 1)];
  return s;
}

function randomBytes(rand: Rand, n: number): Buffer {
  const b = Buffer.alloc(n);
  // No newline inside: one line of junk.
  for (let i = 0; i < n; i++) b[i] = pick(rand, [0x00, 0x7b, 0x22, 0xff, 0xc3, 0x80, 0x41, 0x5d, 0x2c, 0x20]);
  return b;
}
