import type { RunnerProcess } from './spawnRunner.js';
import type { Termination } from './outcome.js';
import { signalRunnerTree, waitForTreeGone } from './groupSignals.js';
import { settlesWithin } from '../util/deferred.js';

/** Where the ladder starts: politely (`shutdown` request) or at SIGTERM for a misbehaving runner. */
export type LadderStart = 'request' | 'sigterm';

/** Grace periods of the ladder (from HostLimits). */
export interface LadderGraces {
  shutdownGraceMs: number;
  termGraceMs: number;
  killConfirmMs: number;
}

/** What the ladder did. */
export interface LadderReport {
  termination: Termination;
  /** Live pids of the group or session after the final SIGKILL; empty when all died. */
  survivors: number[];
}

/**
 * Stop a runner and everything in its process group:
 * `shutdown` request → stdin end → grace → SIGTERM to the group → grace → SIGKILL to the group,
 * then confirm through /proc that no member is left. Members left after the leader exited
 * (background grandchildren) get SIGTERM, a grace, then SIGKILL too.
 */
export async function runShutdownLadder(args: {
  proc: RunnerProcess;
  start: LadderStart;
  graces: LadderGraces;
  exited: Promise<void>;
  hasExited: () => boolean;
  requestShutdown: (timeoutMs: number) => Promise<unknown>;
}): Promise<LadderReport> {
  const { proc, graces, exited, hasExited } = args;
  const exitWithin = (ms: number) => settlesWithin(exited, ms);
  let termination: Termination = 'exited';

  if (!hasExited() && args.start === 'request') {
    termination = 'shutdown';
    await Promise.race([args.requestShutdown(graces.shutdownGraceMs).catch(() => undefined), exited]);
    if (!(await exitWithin(graces.shutdownGraceMs))) {
      termination = 'stdin_closed';
      proc.stdin.end();
      await exitWithin(graces.shutdownGraceMs);
    }
  }
  if (!hasExited()) {
    termination = 'sigterm';
    signalRunnerTree(proc.pid, 'SIGTERM');
    if (!(await exitWithin(graces.termGraceMs))) {
      termination = 'sigkill';
      signalRunnerTree(proc.pid, 'SIGKILL');
      await exitWithin(graces.killConfirmMs);
    }
  }
  // The leader is gone; its group or session may not be (e.g. `sleep 1000 &`).
  let survivors = await waitForTreeGone(proc.pid, 0);
  if (survivors.length > 0) {
    signalRunnerTree(proc.pid, 'SIGTERM');
    survivors = await waitForTreeGone(proc.pid, graces.termGraceMs);
  }
  if (survivors.length > 0) {
    signalRunnerTree(proc.pid, 'SIGKILL');
    survivors = await waitForTreeGone(proc.pid, graces.killConfirmMs);
  }
  return { termination, survivors };
}
