import { signalableGroup, signalEach, waitUntilGone } from '../../sdk/process/procTable.js';
import { liveGroupMembers } from '../util/procIdentity.js';

/**
 * Signal a runner's process tree: the group (`kill(-pgid)`), plus every live process of its
 * session found in /proc, which catches members that moved to another group with setpgid.
 * `setsid` escapees leave the session too; only a pid namespace or cgroup catches those. A `pgid` that is no runner's
 * (≤ 1, this process or its own group: a pid read wrongly, e.g. recorded in another pid namespace) is left alone.
 */
export function signalRunnerTree(pgid: number, signal: NodeJS.Signals): void {
  if (!signalableGroup(pgid)) return;
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is empty.
  }
  signalEach(liveGroupMembers(pgid), signal);
}

/**
 * Wait until /proc shows no live member of the group or session, or `timeoutMs` passes.
 * Resolves with the pids still alive (empty when the tree is gone).
 */
export function waitForTreeGone(pgid: number, timeoutMs: number): Promise<number[]> {
  return waitUntilGone(() => liveGroupMembers(pgid), timeoutMs);
}
