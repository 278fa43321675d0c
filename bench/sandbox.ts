import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { parseLimits } from '../host/config/limits.js';
import { configureContainer } from '../host/di/configure.js';
import { TOKENS } from '../host/di/tokens.js';
import { textEvent } from '../sdk/protocol/runParams.js';
import { fmt, summarize } from './stats.js';

/**
 * The price of the sandbox: a whole run of the echo runner through RunService under each backend
 * (process + run cgroup + prlimit, and bwrap on top), interleaved, against the same run with the
 * process backend as the baseline.
 */
export async function sandboxBench(count = 30) {
  const dataDir = mkdtempSync(`${tmpdir()}/paddock-bench-sandbox-`);
  const container = configureContainer({
    dataDir,
    limits: parseLimits(),
    runnerDirs: [],
    logLevel: 'silent',
    keepWorkspaces: false,
  });
  const runs = container.resolve(TOKENS.RunService);
  const times: Record<'process' | 'bwrap', number[]> = { process: [], bwrap: [] };
  for (let i = 0; i < count + 3; i++) {
    for (const sandbox of ['process', 'bwrap'] as const) {
      const t = performance.now();
      const outcome = await runs.runAdHoc({ runner: 'echo', event: textEvent('bench'), sandbox });
      if (outcome.status !== 'completed') throw new Error(`${sandbox}: ${outcome.reason}`);
      if (i >= 3) times[sandbox].push(performance.now() - t);
    }
  }
  container.resolve(TOKENS.Store).close();
  rmSync(dataDir, { recursive: true, force: true });
  const p = summarize(times.process);
  const b = summarize(times.bwrap);
  console.log(
    `\n## Sandbox cost (${count} whole runs each, interleaved, first 3 dropped; echo runner through RunService)`,
  );
  console.log('method: wall time of RunService.runAdHoc (workspace, cgroup, spawn, handshake, run, shutdown,');
  console.log(
    '        cgroup kill, store) with --sandbox process (cgroup + prlimit) vs bwrap (the same plus namespaces).',
  );
  console.log(`process: median ${fmt(p.median, 1)} ms, p90 ${fmt(p.p90, 1)} ms`);
  console.log(`bwrap:   median ${fmt(b.median, 1)} ms, p90 ${fmt(b.p90, 1)} ms`);
  console.log(`ratio bwrap / process (median): ${fmt(b.median / p.median, 2)}×`);
  return { process: p, bwrap: b };
}
