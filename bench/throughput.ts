import { bundle, hostRun, rawRunLines, rawSpawn } from './harness.js';
import { fmt, summarize } from './stats.js';

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
