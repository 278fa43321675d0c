import { randomBytes } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { DeltaRedactor } from '../host/secrets/deltaRedactor.js';
import { Redactor } from '../host/secrets/redactor.js';
import { importAtRevision, ISSUE_16_START } from './beforeRevision.js';
import { fmt, summarize } from './stats.js';

/** What both redactors offer that the bench drives. */
type AnyRedactor = Pick<Redactor, 'add' | 'forget' | 'text' | 'stream'>;

/** One function's figures over the rounds, in milliseconds. */
interface Timing {
  /** Median CPU time of this process (user + system): what the work costs, whatever else shares the machine. */
  cpu: number;
  /** Median wall-clock time. */
  wall: number;
  /** Best wall-clock round. */
  best: number;
}

/**
 * Each function run once per round in turn (after one warm-up run each), so that every figure sees the same load. A
 * function in `fewer` runs only in that many first rounds.
 */
function interleaved(
  fns: Record<string, () => void>,
  rounds: number,
  fewer: Record<string, number> = {},
): Record<string, Timing> {
  const walls: Record<string, number[]> = {};
  const cpus: Record<string, number[]> = {};
  for (const [name, fn] of Object.entries(fns)) {
    fn();
    walls[name] = [];
    cpus[name] = [];
  }
  for (let i = 0; i < rounds; i++)
    for (const [name, fn] of Object.entries(fns)) {
      if (i >= (fewer[name] ?? rounds)) continue;
      const cpu = process.cpuUsage();
      const started = process.hrtime.bigint();
      fn();
      walls[name]!.push(Number(process.hrtime.bigint() - started) / 1e6);
      const used = process.cpuUsage(cpu);
      cpus[name]!.push((used.user + used.system) / 1e3);
    }
  return Object.fromEntries(
    Object.keys(fns).map((name) => [
      name,
      { cpu: summarize(cpus[name]!).median, wall: summarize(walls[name]!).median, best: Math.min(...walls[name]!) },
    ]),
  );
}

/** A run token as the gateway mints it (host/gateway/runTokens.ts): all share the prefix `pdk_run_`. */
const runToken = () => `pdk_run_${randomBytes(32).toString('base64url')}`;

/** 1,000 values: 20 configured keys of different shapes, 980 run tokens (what a busy host holds). */
function registered(): string[] {
  const keys = Array.from({ length: 20 }, (_, i) => `key-${i}-${randomBytes(16).toString('hex')}`);
  return [...keys, ...Array.from({ length: 980 }, runToken)];
}

/**
 * About `size` characters of what a host redacts: prose, code, a URL, JSON and a base64 blob, with one value in each
 * of five forms every 100 KB (raw, JSON-escaped inside a string, base64 at an odd offset, hex, base64url).
 */
function largeText(size: number, values: string[]): string {
  const prose =
    'The quick brown fox jumps over the lazy dog; see https://example.com/docs?q=1 for the thought behind it.\n';
  const code = 'export function handler(req, res) { return res.json({ ok: true, items: [1, 2, 3], id: "a_b-c" }); }\n';
  const blob = `data: ${randomBytes(600).toString('base64')}\n`;
  const block = (prose.repeat(8) + code.repeat(8) + blob).repeat(40);
  const parts: string[] = [];
  let length = 0;
  for (let i = 0; length < size; i++) {
    const v = values[(i * 37) % values.length]!;
    const forms = [
      v,
      JSON.stringify({ token: v }),
      Buffer.from(`KEY=${v}`).toString('base64'),
      Buffer.from(v).toString('hex'),
      Buffer.from(v).toString('base64url'),
    ];
    const piece = `${block.slice(0, 100_000)} ${forms[i % forms.length]} `;
    parts.push(piece);
    length += piece.length;
  }
  return parts.join('').slice(0, size);
}

/** Bytes a fresh redactor takes once it knows `values` (heap and array buffers, after full collections). */
function memoryOf(values: string[]): number {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const used = () => {
    gc();
    gc();
    const m = process.memoryUsage();
    return m.heapUsed + m.arrayBuffers;
  };
  const before = used();
  const redactor = new Redactor();
  for (const v of values) redactor.add(v);
  const after = used();
  if (redactor.size === 0) throw new Error('nothing registered');
  return after - before;
}

/**
 * The redactor with 1,000 registered values (issue 16): before (one regular expression over every form,
 * host/secrets/ as of the revision issue 16 started from, bench/beforeRevision.ts) and now (host/secrets/formIndex.ts),
 * in the same process and rounds:
 * - large text: `text()` of 1 MB holding 10 secret forms, in MB/s, beside `Buffer.indexOf` of an absent 8-byte needle
 *   over the same bytes (a native scan: the floor) and beside the credential shapes alone (no registered value);
 * - a stream: 64-character `message.delta` updates through the run's DeltaRedactor, µs per update;
 * - add/forget: registering a fresh run token and forgetting it, each followed by one redaction of a 64-character
 *   text (the old code rebuilt its pattern lazily, at the first redaction after a change);
 * - memory: what a fresh redactor holds for the 1,000 values.
 * Scans and updates are reported from the median CPU time of this process per round (on a shared machine the wall
 * clock mostly measures the other processes), with the wall-clock median and best round beside.
 */
export async function redactorBench(rounds = 41) {
  const values = registered();
  const text = largeText(1_000_000, values);
  const bytes = Buffer.byteLength(text);
  const { Redactor: RedactorBefore } = await importAtRevision<{ Redactor: new () => AnyRedactor }>(
    ISSUE_16_START,
    ['host/secrets'],
    'host/secrets/redactor.ts',
  );
  const make = (kind: 'before' | 'now', set = values): AnyRedactor => {
    const r = kind === 'before' ? new RedactorBefore() : new Redactor();
    for (const v of set) r.add(v);
    return r;
  };
  const before = make('before');
  const now = make('now');
  const shapesOnly = new Redactor();
  if (now.text(text) !== before.text(text)) console.log('  (note: the two redactors differ on the large text)');
  if (now.text(text).includes(values[0]!)) throw new Error('a registered value survived');
  console.log('\n## Redactor (issue 16): 1,000 registered values, medians of %d rounds', rounds);

  const buffer = Buffer.from(text);
  const mbs = (ms: number) => bytes / 1e6 / (ms / 1e3);
  const scans = interleaved(
    {
      indexOf: () => void buffer.indexOf('zq#9!x@w'),
      shapesOnly: () => void shapesOnly.text(text),
      now: () => void now.text(text),
      before: () => void before.text(text),
    },
    rounds,
    { before: 3 },
  );
  const large = {
    bytes,
    /** MB/s from the median CPU time of a round (the figure to read on a shared machine). */
    indexOfMBs: mbs(scans.indexOf!.cpu),
    shapesOnlyMBs: mbs(scans.shapesOnly!.cpu),
    beforeMBs: mbs(scans.before!.cpu),
    nowMBs: mbs(scans.now!.cpu),
    nowWallMBs: mbs(scans.now!.wall),
    nowBestMBs: mbs(scans.now!.best),
    speedup: scans.before!.cpu / scans.now!.cpu,
  };
  console.log(
    `  large text (${fmt(bytes / 1e6, 2)} MB), CPU-time medians: now ${fmt(large.nowMBs, 0)} MB/s, before ` +
      `${fmt(large.beforeMBs, 1)} MB/s (×${fmt(large.speedup, 0)}); ` +
      `shapes alone ${fmt(large.shapesOnlyMBs, 0)} MB/s; Buffer.indexOf ${fmt(large.indexOfMBs, 0)} MB/s ` +
      `(now at ${fmt(large.nowMBs / large.indexOfMBs, 3)}× it); ` +
      `now by wall clock: median ${fmt(large.nowWallMBs, 0)}, best round ${fmt(large.nowBestMBs, 0)} MB/s`,
  );

  // The same with 1,000 unrelated random values (no shared prefix): the old single pattern is slower on these.
  const random = Array.from({ length: 1000 }, () => randomBytes(24).toString('base64url'));
  const randomText = largeText(1_000_000, random);
  const [nowRandom, beforeRandom] = [make('now', random), make('before', random)];
  const randomScans = interleaved(
    { now: () => void nowRandom.text(randomText), before: () => void beforeRandom.text(randomText) },
    rounds,
    { before: 3 },
  );
  const unrelated = { nowMBs: mbs(randomScans.now!.cpu), beforeMBs: mbs(randomScans.before!.cpu) };
  console.log(
    `  the same with 1,000 unrelated random values: now ${fmt(unrelated.nowMBs, 0)} MB/s, before ` +
      `${fmt(unrelated.beforeMBs, 1)} MB/s (×${fmt(unrelated.nowMBs / unrelated.beforeMBs, 0)})`,
  );

  const prose = largeText(200_000, ['no-secret-here-000']).replace(/no-secret-here-000/g, 'plain words here.');
  const deltas = Array.from({ length: Math.floor(prose.length / 64) }, (_, i) => prose.slice(i * 64, i * 64 + 64));
  const through = (r: AnyRedactor) => () => {
    const d = new DeltaRedactor(r as Redactor);
    for (const text of deltas) d.update({ kind: 'message.delta', messageId: 'm', text });
    d.end();
  };
  const streamed = interleaved(
    { now: through(now), shapesOnly: through(shapesOnly), before: through(before) },
    rounds,
    { before: 5 },
  );
  const us = (ms: number) => (ms * 1e3) / deltas.length;
  const updates = {
    nowUs: us(streamed.now!.cpu),
    nowWallUs: us(streamed.now!.wall),
    nowBestUs: us(streamed.now!.best),
    beforeUs: us(streamed.before!.cpu),
    shapesOnlyUs: us(streamed.shapesOnly!.cpu),
  };
  console.log(
    `  64-character update (DeltaRedactor), CPU-time medians: now ${fmt(updates.nowUs, 2)} µs, before ` +
      `${fmt(updates.beforeUs, 1)} µs (×${fmt(updates.beforeUs / updates.nowUs, 0)}); no registered value ` +
      `${fmt(updates.shapesOnlyUs, 2)} µs; now by wall clock: median ${fmt(updates.nowWallUs, 2)}, best round ` +
      `${fmt(updates.nowBestUs, 2)} µs`,
  );

  const probe = 'a short text of sixty-four characters to redact after a change.';
  const change = (r: AnyRedactor, n: number) => {
    const add: number[] = [];
    const forget: number[] = [];
    for (let i = 0; i < n; i++) {
      const token = runToken();
      let started = process.hrtime.bigint();
      r.add(token);
      r.text(probe);
      add.push(Number(process.hrtime.bigint() - started) / 1e6);
      started = process.hrtime.bigint();
      r.forget(token);
      r.text(probe);
      forget.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
    return { addMs: summarize(add).median, forgetMs: summarize(forget).median, addP99Ms: summarize(add).p99 };
  };
  const changes = { now: change(now, 500), before: change(before, 7) };
  console.log(
    `  add + one redaction: now ${fmt(changes.now.addMs, 3)} ms (p99 ${fmt(changes.now.addP99Ms, 3)}), before ` +
      `${fmt(changes.before.addMs, 0)} ms; forget + one redaction: now ${fmt(changes.now.forgetMs, 3)} ms, before ` +
      `${fmt(changes.before.forgetMs, 0)} ms`,
  );

  const memoryMiB = memoryOf(values) / 2 ** 20;
  const unrelatedMemoryMiB = memoryOf(random) / 2 ** 20;
  console.log(
    `  memory of a redactor knowing the 1,000 values: ${fmt(memoryMiB, 1)} MiB ` +
      `(the 1,000 unrelated ones: ${fmt(unrelatedMemoryMiB, 1)} MiB)`,
  );
  return { large, unrelated, updates, changes, memoryMiB, unrelatedMemoryMiB };
}
