import { signalableGroup } from '../../sdk/process/procTable.js';
import { processStartTime } from '../util/procIdentity.js';

/**
 * Kill the group of a runner whose start the host has failed already (its spawner was lost between writing the pid and
 * the host reading it, or it sent no stdio): nobody supervises it. Only while `pid` is still the process the spawner
 * started (same start time, as the spawner read it while the runner was its unreaped child), never a reused pid; a
 * leader already gone leaves the rest to its run's end (cgroup, escapee scan: docs/runner-spawner.md). Returns whether
 * it signalled.
 */
export function killAbandonedRunner(pid: number, start: number | null | undefined): boolean {
  if (start === null || start === undefined || !signalableGroup(pid) || processStartTime(pid) !== start) return false;
  try {
    process.kill(-pid, 'SIGKILL');
    return true;
  } catch {
    return false; // gone meanwhile
  }
}
