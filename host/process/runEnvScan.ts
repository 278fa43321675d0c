import { readdirSync, readFileSync } from 'node:fs';
import { signalEach, stillAlive, waitUntilGone } from '../../sdk/process/procTable.js';

/**
 * Live processes whose initial environment holds `PADDOCK_RUN_ID=<runId>`: every process a run
 * started inherits it, wherever it moved since (another process group, session or cgroup — a
 * runner with the host user's rights can write its pid into any cgroup.procs). A process that
 * re-execs with a fresh environment is not found: say so wherever this is relied on.
 */
export function processesOfRun(runId: string): number[] {
  const needle = Buffer.from(`\0PADDOCK_RUN_ID=${runId}\0`);
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    const first = name.charCodeAt(0);
    if (first < 48 || first > 57 || Number(name) === process.pid) continue;
    try {
      // A leading NUL so the first variable matches the same way as the others.
      const environ = Buffer.concat([Buffer.from([0]), readFileSync(`/proc/${name}/environ`), Buffer.from([0])]);
      if (environ.includes(needle)) found.push(Number(name));
    } catch {
      // Gone, or a kernel thread.
    }
  }
  return stillAlive(found);
}

/** SIGKILL every process of {@link processesOfRun} and wait (bounded) until none is left; returns what was found and what survived. */
export async function killEscapees(runId: string, timeoutMs: number): Promise<{ found: number[]; survivors: number[] }> {
  const found = processesOfRun(runId);
  if (found.length === 0) return { found, survivors: [] };
  signalEach(found, 'SIGKILL');
  const survivors = await waitUntilGone(() => {
    const left = processesOfRun(runId);
    signalEach(left, 'SIGKILL');
    return left;
  }, timeoutMs);
  return { found, survivors };
}
