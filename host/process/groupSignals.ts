import { setTimeout as delay } from 'node:timers/promises';
import { liveGroupMembers, signalEach } from '../../sdk/process/procTable.js';

/** How often /proc is rescanned while waiting for a group to die. */
const POLL_MS = 20;

/**
 * Signal a runner's process tree: the group (`kill(-pgid)`), plus every live process of its
 * session found in /proc, which catches members that moved to another group with setpgid.
 * `setsid` escapees leave the session too; only a pid namespace or cgroup catches those.
 */
export function signalRunnerTree(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is empty.
  }
  signalEach(liveGroupMembers(pgid), signal);
}

/**
 * Wait until /proc shows no live member of the group or session, or `timeoutMs` passes.
 * Resolves with the pids still alive (empty when the tree is gone). Polls /proc because there is
 * no event for the death of a process that is not our child.
 */
export async function waitForTreeGone(pgid: number, timeoutMs: number): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const members = liveGroupMembers(pgid);
    if (members.length === 0 || Date.now() >= deadline) return members;
    await delay(POLL_MS);
  }
}
