import { bundle, hostRun, rawRunLines, rawSpawn } from './harness.js';
import { fmt, summarize } from './stats.js';

/** Spawn → first run/update through the host vs a bare node spawn of the same bundled file. */
export async function coldStart(iterations = 20): Promise<Record<string, unknown>> {
  const script = await bundle('runners/echo/index.ts');
  const host: number[] = [];
  const bareFirstLine: number[] = [];
  const bareFirstUpdate: number[] = [];
  await hostRun(script, {}); // warm the page cache and lazy modules
  for (let i = 0; i < iterations; i++) {
    let t = performance.now();
    let first = 0;
    await hostRun(script, { onUpdate: () => (first ||= performance.now() - t) });
    host.push(first);
    t = performance.now();
    let line = 0;
    await rawSpawn(script, rawRunLines({}), (l) => {
      line ||= performance.now() - t;
      if (l.includes('"run/update"')) {
        bareFirstUpdate.push(performance.now() - t);
        return true;
      }
      return false;
    });
    bareFirstLine.push(line);
  }
  const h = summarize(host);
  const bl = summarize(bareFirstLine);
  const bu = summarize(bareFirstUpdate);
  console.log(`\n## Cold start (${iterations} runs each, interleaved; echo runner, bundled)`);
  console.log('method: host = superviseRun() from call to the first run/update it forwards (spawn in a new group,');
  console.log('        env allowlist, initialize round trip, run, validation); baseline = child_process.spawn of the');
  console.log('        same bundled file with initialize+run written at once, read by a plain line splitter.');
  console.log(`host → first update:        median ${fmt(h.median)} ms, p90 ${fmt(h.p90)} ms`);
  console.log(`bare → first stdout line:   median ${fmt(bl.median)} ms, p90 ${fmt(bl.p90)} ms`);
  console.log(`bare → first run/update:    median ${fmt(bu.median)} ms, p90 ${fmt(bu.p90)} ms`);
  console.log(`ratio host / bare (first update, median): ${fmt(h.median / bu.median, 2)}×`);
  return { hostMs: h, bareFirstLineMs: bl, bareFirstUpdateMs: bu, ratio: h.median / bu.median };
}
