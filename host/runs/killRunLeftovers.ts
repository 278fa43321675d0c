import { killEscapees } from '../process/runEnvScan.js';
import type { Containment } from '../sandbox/containment.js';

/** What is left of a run's processes once its runner is stopped, or once its start failed. */
export interface RunLeftovers {
  /** Pids still alive after the kills. */
  survivors: number[];
  /** Names the escapees found by their environment, for the run's reason. */
  note?: string;
}

/**
 * Empty what holds the run's process tree (its cgroup, then removed) and, last, kill whatever still carries its
 * `PADDOCK_RUN_ID` (`envRunId`: the run's id, or its warm slot's): a descendant that left the group, the session and
 * the cgroup (a process-backend runner has the host user's rights and can move itself to another cgroup). Also what a
 * start that failed after the fork must do (docs/runner-spawner.md): `startedAfter` 0 then, the runner's start time
 * being unknown.
 */
export async function killRunLeftovers(input: {
  containment?: Containment;
  envRunId: string;
  killConfirmMs: number;
  startedAfter: number;
}): Promise<RunLeftovers> {
  const { containment, killConfirmMs } = input;
  const left = (await containment?.killAll(killConfirmMs)) ?? [];
  if (containment && left.length === 0) await containment.release();
  const escaped = await killEscapees(input.envRunId, killConfirmMs, input.startedAfter);
  return {
    survivors: [...new Set([...left, ...escaped.survivors])],
    ...(escaped.found.length > 0
      ? {
          note:
            `${escaped.found.length} process(es) of the run had left its process group, session and cgroup (found ` +
            `by PADDOCK_RUN_ID in their environment: pids ${escaped.found.join(', ')}) and were killed`,
        }
      : {}),
  };
}
