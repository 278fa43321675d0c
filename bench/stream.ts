import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { parseLimits } from '../host/config/limits.js';
import { Gateway } from '../host/gateway/gateway.js';
import { RunService } from '../host/runs/runService.js';
import { Redactor } from '../host/secrets/redactor.js';
import { dbOf, Store } from '../host/state/store.js';
import { textEvent } from '../sdk/protocol/runParams.js';
import { bundle, hostRun, rawRunLines, rawSpawn } from './harness.js';
import { fmt, summarize } from './stats.js';

/** One measured stream: updates per second from the first update seen to the last; host CPU µs per update. */
interface Rate {
  perSecond: number;
  cpuMicros?: number;
}

/**
 * The stored stream against the unstored one and the raw pipe, in the same rounds (issue 16, item 2): the
 * streams-deltas runner emits COUNT message.delta updates of SIZE chars; each case counts what reaches its end.
 * Cases, interleaved per round: raw pipe (lines split and counted, nothing parsed); the host without a store
 * (`superviseRun`: framing, JSON parse, envelope + zod validation, seq checks, quotas); the host through
 * `RunService` with the production store set-up (`redact: redactor.value`, every update committed to SQLite before
 * it is forwarded), with no registered secrets, with SECRETS registered ones, and — for analysis only — with a
 * redactor that changes nothing.
 */
export async function streamBench(
  count = Number(process.env.PADDOCK_BENCH_COUNT ?? 100_000),
  size = 64,
  rounds = Number(process.env.PADDOCK_BENCH_ROUNDS ?? 5),
  secrets = 1_000,
) {
  const only = process.env.PADDOCK_BENCH_STREAM_CASE; // one case alone (for profiling)
  const script = await bundle('bench/runners/streamsDeltas.ts');
  const values = Array.from({ length: secrets }, () => `sk-bench-${randomBytes(16).toString('hex')}`);
  const cases: Record<string, () => Promise<Rate>> = {
    raw: () => rawRate(script, count, size),
    unstored: () => unstoredRate(script, count, size),
    stored: () => storedRate(count, size, []),
    [`stored, ${secrets} secrets`]: () => storedRate(count, size, values),
    'stored, no redaction': () => storedRate(count, size, [], new NoRedaction()),
  };
  const names = Object.keys(cases).filter((name) => !only || name === only);
  const samples: Record<string, Rate[]> = Object.fromEntries(names.map((n) => [n, []]));
  console.log(`\n## stored vs unstored stream (${rounds} rounds, cases interleaved, medians)`);
  console.log(`method: streams-deltas emits ${count} message.delta updates of ${size} chars; rate = updates from the`);
  console.log('        first update each case sees to its last. raw = the runner spawned bare, stdout lines counted;');
  console.log('        unstored = superviseRun() forwarding to a counter; stored = RunService.runAdHoc with the');
  console.log("        host's store set-up (redact: redactor.value), each update committed before it is forwarded;");
  console.log('        "no redaction" (analysis only) swaps in a redactor that changes nothing. Host CPU = this');
  console.log("        process's user + system time per update (all threads), sampled every 1 000 updates.");
  for (let r = 0; r < rounds; r++) {
    for (const name of r % 2 === 0 ? names : [...names].reverse()) samples[name]!.push(await cases[name]!());
  }
  const median = (name: string, of: (r: Rate) => number = (r) => r.perSecond) =>
    summarize((samples[name] ?? []).map(of)).median;
  const results: Record<string, unknown> = { count, size, rounds, secrets };
  for (const name of names) {
    const m = median(name);
    const cpu = median(name, (r) => r.cpuMicros ?? NaN);
    const spread = samples[name]!.map((v) => fmt(v.perSecond / 1000)).join(' ');
    console.log(
      `${name.padEnd(22)} ${fmt(m / 1000).padStart(6)}k updates/s  ` +
        `(${fmt(m / median('unstored'), 2)}× unstored, ${fmt(m / median('raw'), 2)}× raw` +
        `${Number.isNaN(cpu) ? '' : `; host CPU ${fmt(cpu, 2)} µs/update`}; rounds: ${spread})`,
    );
    results[name] = { median: m, cpuMicros: cpu, samples: samples[name] };
  }
  return results;
}

/**
 * For analysis only, never a host's set-up: a redactor that changes nothing, to show what the stored stream costs
 * apart from redaction (the stream's chunk-safe pass and the store's pass), i.e. what a faster redactor can win.
 */
class NoRedaction extends Redactor {
  override text(input: string): string {
    return input;
  }
  override value<T>(input: T): T {
    return input;
  }
  override stream(): { push(chunk: string): string; end(): string } {
    return { push: (chunk) => chunk, end: () => '' };
  }
}

/** The runner spawned bare: its stdout split into lines and counted, nothing parsed. */
async function rawRate(script: string, count: number, size: number): Promise<Rate> {
  let start = 0;
  let seen = 0;
  await rawSpawn(script, rawRunLines({ count, size }), (line) => {
    if (line.includes('"run/update"')) {
      if (seen++ === 0) start = performance.now();
      return false;
    }
    return line.includes('"id":2');
  });
  if (seen !== count) throw new Error(`raw: ${seen} updates`);
  return { perSecond: count / ((performance.now() - start) / 1000) };
}

/** The host without a store: superviseRun forwarding every valid update to a counter. */
async function unstoredRate(script: string, count: number, size: number): Promise<Rate> {
  const t = timer();
  const outcome = await hostRun(script, { config: { count, size }, onUpdate: t.tick });
  if (outcome.status !== 'completed' || t.seen !== count)
    throw new Error(`unstored: ${outcome.status} ${outcome.reason} (${t.seen} updates)`);
  return t.rate(count);
}

/** The host through RunService and a real store, every update committed before the caller hears of it. */
async function storedRate(count: number, size: number, secrets: string[], redactor = new Redactor()): Promise<Rate> {
  const dataDir = mkdtempSync(join(tmpdir(), 'paddock-bench-stream-'));
  for (const s of secrets) redactor.add(s);
  const store = Store.open({ dataDir, redact: (v) => redactor.value(v) });
  const limits = parseLimits({ maxUpdates: 10_000_000, maxEventBytes: 2 ** 31 - 1, maxStdoutBytes: 2 ** 31 - 1 });
  const log = pino({ level: 'silent' });
  const service = new RunService(
    { dataDir, limits, runnerDirs: [], logLevel: 'silent', keepWorkspaces: false },
    log,
    store,
    redactor,
    new Gateway({ store, redactor, log, dataDir }),
  );
  const t = timer();
  try {
    const outcome = await service.runAdHoc({
      runner: new URL('./runnerDirs/streams-deltas', import.meta.url).pathname,
      event: textEvent('bench'),
      config: { count, size },
      onUpdate: t.tick,
    });
    // The delta redactor sends what it held back of the message as one more delta at the end.
    if (outcome.status !== 'completed' || t.seen < count)
      throw new Error(`stored: ${outcome.status} ${outcome.reason} (${t.seen})`);
    const stored = dbOf(store).prepare("SELECT count(*) FROM events WHERE type = 'run.update'").pluck().get();
    if (stored !== t.seen) throw new Error(`stored: ${String(stored)} run.update events for ${t.seen} forwarded`);
    return t.rate(count);
  } finally {
    store.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * Counts calls and times the first to the last; samples this process's CPU time (user + system, all threads) at the
 * first call and every 1 000th, for the host's CPU per update (less sensitive to a loaded machine than the rate).
 */
function timer() {
  let start = 0;
  let end = 0;
  let cpuStart = 0;
  let cpuLast = 0;
  let cpuSeen = 0;
  const cpuNow = () => {
    const u = process.cpuUsage();
    return u.user + u.system;
  };
  const t = {
    seen: 0,
    tick: () => {
      if (t.seen++ === 0) {
        start = performance.now();
        cpuStart = cpuNow();
      } else if (t.seen % 1000 === 0) {
        cpuLast = cpuNow();
        cpuSeen = t.seen;
      }
      end = performance.now();
    },
    rate: (n: number): Rate => ({
      perSecond: n / ((end - start) / 1000),
      cpuMicros: (cpuLast - cpuStart) / (cpuSeen - 1),
    }),
  };
  return t;
}
