import { Redactor } from '../host/secrets/redactor.js';
import { bundle, hostRun, rawRunLines, rawSpawn } from './harness.js';
import { fmt, summarize } from './stats.js';
import { dbOf } from '../host/state/store.js';

/** Streamed run/update throughput through the host vs reading the same runner's raw NDJSON pipe. */
export async function throughput(
  cases = [
    { count: 100_000, size: 64 },
    { count: 20_000, size: 4096 },
  ],
  repeats = 3,
) {
  const script = await bundle('bench/runners/streamsDeltas.ts');
  const results: Record<string, unknown>[] = [];
  console.log(`\n## run/update throughput (${repeats} repeats each, best kept)`);
  console.log('method: the bench runner streams-deltas emits COUNT message.delta updates of SIZE chars via ctx.emit.');
  console.log('        host = superviseRun() counting forwarded updates (frame, JSON parse, envelope + zod');
  console.log('        validation, run/seq checks, quotas); baseline = the same runner spawned bare, its stdout');
  console.log('        split into lines and counted, no parsing. Time = first update to the run result.');
  for (const { count, size } of cases) {
    const host: number[] = [];
    const raw: number[] = [];
    let lineBytes = 0;
    for (let r = 0; r < repeats; r++) {
      let start = 0;
      let end = 0;
      let seen = 0;
      const outcome = await hostRun(script, {
        config: { count, size },
        onUpdate: () => {
          if (seen++ === 0) start = performance.now();
          end = performance.now();
        },
      });
      if (outcome.status !== 'completed' || seen !== count)
        throw new Error(`host run: ${outcome.status} ${outcome.reason} (${seen} updates)`);
      lineBytes = outcome.counters.eventBytes / count;
      host.push((end - start) / 1000);
      let rawStart = 0;
      let rawSeen = 0;
      await rawSpawn(script, rawRunLines({ count, size }), (line) => {
        if (line.includes('"run/update"')) {
          if (rawSeen++ === 0) rawStart = performance.now();
          return false;
        }
        return line.includes('"id":2');
      });
      raw.push((performance.now() - rawStart) / 1000);
    }
    const h = Math.min(...host);
    const b = Math.min(...raw);
    const mb = (count * lineBytes) / 1024 / 1024;
    console.log(
      `COUNT=${count} SIZE=${size} (${fmt(lineBytes, 0)} B/line): host ${fmt(count / h / 1000)}k updates/s (` +
        `${fmt(mb / h)} MB/s) · ` +
        `raw pipe ${fmt(count / b / 1000)}k lines/s (${fmt(mb / b)} MB/s) · host/raw throughput ${fmt(b / h, 2)}×`,
    );
    results.push({ count, size, lineBytes, hostSeconds: summarize(host), rawSeconds: summarize(raw), ratio: b / h });
  }
  return results;
}

/**
 * The same stream end to end through RunService: every update committed to SQLite (group commit) before it is
 * forwarded.
 */
export async function throughputWithStore(count = 100_000, size = 64) {
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { pino } = await import('pino');
  const { RunService } = await import('../host/runs/runService.js');
  const { Store } = await import('../host/state/store.js');
  const { parseLimits } = await import('../host/config/limits.js');
  const { textEvent } = await import('../sdk/protocol/runParams.js');
  const dataDir = mkdtempSync(join(tmpdir(), 'paddock-bench-e2e-'));
  const store = Store.open({ dataDir });
  const limits = parseLimits({ maxUpdates: 10_000_000, maxEventBytes: 2 ** 31 - 1, maxStdoutBytes: 2 ** 31 - 1 });
  const { Gateway } = await import('../host/gateway/gateway.js');
  const redactor = new Redactor();
  const log = pino({ level: 'silent' });
  const service = new RunService(
    { dataDir, limits, runnerDirs: [], logLevel: 'silent', keepWorkspaces: false },
    log,
    store,
    redactor,
    new Gateway({ store, redactor, log, dataDir }),
  );
  let start = 0;
  let end = 0;
  let seen = 0;
  const outcome = await service.runAdHoc({
    runner: new URL('./runnerDirs/streams-deltas', import.meta.url).pathname,
    event: textEvent('bench'),
    config: { count, size },
    onUpdate: () => {
      if (seen++ === 0) start = performance.now();
      end = performance.now();
    },
  });
  if (outcome.status !== 'completed' || seen !== count)
    throw new Error(`e2e run: ${outcome.status} ${outcome.reason} (${seen})`);
  const stored = dbOf(store).prepare("SELECT count(*) FROM events WHERE type = 'run.update'").pluck().get() as number;
  store.close();
  rmSync(dataDir, { recursive: true, force: true });
  const perSecond = count / ((end - start) / 1000);
  console.log(
    `COUNT=${count} SIZE=${size} through RunService + SQLite store: ${fmt(perSecond / 1000)}k updates/s, ` +
      `${stored} run.update events stored`,
  );
  return { count, size, perSecond, stored };
}
