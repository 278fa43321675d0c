/**
 * Process groups of runners that are still running. If the host process exits for any reason
 * (crash, uncaught error, process.exit), every registered group is SIGKILLed synchronously so
 * runners die with the host. execa's `cleanup` does not cover detached children, hence this.
 */
const groups = new Set<number>();
/** Synchronous last-resort kills of whole containers (e.g. a cgroup's `cgroup.kill`), by group. */
const extraKills = new Map<number, () => void>();
let hooked = false;

/** Remember a live runner group, and optionally how to kill its whole container synchronously. */
export function registerGroup(pgid: number, killContainer?: () => void): void {
  groups.add(pgid);
  if (killContainer) extraKills.set(pgid, killContainer);
  if (!hooked) {
    hooked = true;
    process.on('exit', killAllGroups);
  }
}

/** Forget a group whose members are confirmed gone. */
export function unregisterGroup(pgid: number): void {
  groups.delete(pgid);
  extraKills.delete(pgid);
}

/** Number of groups the host still tracks (for leak checks). */
export function liveGroupCount(): number {
  return groups.size;
}

function killAllGroups(): void {
  for (const pgid of groups) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // Already gone.
    }
    try {
      extraKills.get(pgid)?.();
    } catch {
      // Best effort: the process is exiting.
    }
  }
}
