import { RunCgroup, runCgroupNames } from '../sandbox/cgroups.js';
import { isSlotId, slotOwnerAlive } from './warmSlotId.js';

/**
 * Empty and remove the cgroups of warm slots whose host process is gone (docs/warm-pool.md), on this machine, whatever
 * data folder they served. A slot is no run in the store, so recovery does not know it; its id names its owning host
 * (pid and start time), and a slot whose owner is gone is nobody's. The slot's runner spawner kills it when its host
 * dies (decisions SP3) unless the spawner died too: this is the backstop, and it removes the emptied directories either
 * way (the run sweep keeps every directory that is not a run's). Returns the slot ids whose cgroups it emptied.
 */
export async function clearDeadSlotCgroups(killConfirmMs = 5_000): Promise<string[]> {
  const cleared: string[] = [];
  for (const id of runCgroupNames()) {
    if (!isSlotId(id) || slotOwnerAlive(id)) continue;
    const cgroup = RunCgroup.attach(id, []);
    if (!cgroup) continue;
    if ((await cgroup.killAll(killConfirmMs)).length === 0) await cgroup.release();
    cleared.push(id);
  }
  return cleared;
}
