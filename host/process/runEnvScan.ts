import { readFileSync } from 'node:fs';
import { readProcTable, signalEach, waitUntilGone } from '../../sdk/process/procTable.js';

/**
 * Live processes whose initial environment holds `PADDOCK_RUN_ID=<runId>`: every process a run
 * started inherits it, wherever it moved since (another process group, session or cgroup — a
 * runner with the host user's rights can write its pid into any cgroup.procs). A process that
 * re-execs with a fresh environment is not found: say so wherever this is relied on.
 * `startedAfter` (clock ticks after boot, e.g. the runner's start time) skips older processes
 * without reading their environment: one /proc scan of `stat` files, a few `environ` reads.
 */
export function processesOfRun(runId: string, startedAfter = 0): number[] {
  const needle = Buffer.from(`\0PADDOCK_RUN_ID=${runId}\0`);
  const found: number[] = [];
  for (const p of readProcTable()) {
    if (p.state === 'Z' || p.startTime < startedAfter || p.pid === process.pid) continue;
    try {
      // A leading NUL so the first variable matches the same way as the others.
      const environ = Buffer.concat([Buffer.from([0]), readFileSync(`/proc/${p.pid}/environ`), Buffer.from([0])]);
      if (environ.includes(needle)) found.push(p.pid);
    } catch {
      // Gone, or a kernel thread.
    }
  }
  return found;
}

/**
 * SIGKILL every process of {@link processesOfRun} and wait (bounded) until none is left; returns what was found and
 * what survived.
 */
export async function killEscapees(
  runId: string,
  timeoutMs: number,
  startedAfter = 0,
): Promise<{ found: number[]; survivors: number[] }> {
  const found = processesOfRun(runId, startedAfter);
  if (found.length === 0) return { found, survivors: [] };
  signalEach(found, 'SIGKILL');
  const survivors = await waitUntilGone(() => {
    const left = processesOfRun(runId, startedAfter);
    signalEach(left, 'SIGKILL');
    return left;
  }, timeoutMs);
  return { found, survivors };
}
