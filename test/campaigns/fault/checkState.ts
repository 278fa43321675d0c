// Every check of the fault campaign on one data folder, after a kill (`recovered` false: what any committed state
// must satisfy) or after the next host finished its run (`recovered` true: everything ended, nothing left running).
import {
  effectsOnce,
  endedExactlyOnce,
  gapFreeSeq,
  interruptionToldOnce,
  noneRunning,
  streamedAreStored,
  type StreamedUpdate,
} from './invariants.js';
import { runnerLeftovers, workspaceLeftovers } from './leftovers.js';
import { readState, type DataState } from './readState.js';

/**
 * The broken invariants of the state at `dataDir` (empty if it holds), the findings that are not invariants the
 * issue names (workspaces left on disk by interrupted runs), and the state read.
 */
export function checkState(
  dataDir: string,
  streamed: readonly StreamedUpdate[],
  recovered: boolean,
): { problems: string[]; findings: string[]; state: DataState } {
  const state = readState(dataDir);
  const { events, runs, audit } = state;
  const problems = [
    ...gapFreeSeq(events),
    ...effectsOnce(events, recovered),
    ...streamedAreStored(streamed, events),
    ...interruptionToldOnce(runs, events, recovered),
    ...(audit.ok ? [] : [`audit does not verify: ${JSON.stringify(audit)}`]),
    ...(recovered
      ? [...noneRunning(runs), ...endedExactlyOnce(runs, events), ...runnerLeftovers(runs, events, dataDir)]
      : []),
  ];
  return { problems, findings: recovered ? workspaceLeftovers(runs, dataDir) : [], state };
}
