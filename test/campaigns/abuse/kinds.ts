// The abuses of the abuse campaign, what each must end as, and what ends it.
import type { OutcomeStatus } from '../../../host/process/outcome.js';

/** One abuse of the `abuser` runner (config.kind). */
export interface AbuseKind {
  kind: 'forkBomb' | 'memoryHog' | 'outputFlood' | 'sigtermIgnorer' | 'setsidEscapee';
  /** Runs only where the run gets cgroup limits (pids.max, memory.max): never uncapped on a shared machine. */
  needsCgroups: boolean;
  /** The campaign cancels the run as soon as the abuse starts (the abuse is ignoring the cancel and SIGTERM). */
  cancelAtStart: boolean;
  /** How the run must end. */
  expected: OutcomeStatus[];
  /** The container limit that must have acted (the outcome's `limits`): the abuse reached it and was held. */
  mustHit?: 'pids' | 'memoryBytes';
  /** What ends it, for the report. */
  endedBy: string;
}

/** Every abuse, in the campaign's order. */
export const ABUSES: readonly AbuseKind[] = [
  {
    kind: 'forkBomb',
    needsCgroups: true,
    cancelAtStart: false,
    expected: ['timed_out'],
    mustHit: 'pids',
    endedBy: 'pids limit caps the tree; idle limit (3 s) ends the run; cgroup kill',
  },
  {
    kind: 'memoryHog',
    needsCgroups: true,
    cancelAtStart: false,
    expected: ['crashed', 'quota_exceeded'],
    mustHit: 'memoryBytes',
    endedBy: 'memory limit (256 MiB): the kernel OOM-kills the runner',
  },
  {
    kind: 'outputFlood',
    needsCgroups: false,
    cancelAtStart: false,
    expected: ['quota_exceeded'],
    endedBy: 'stdout byte quota (8 MiB)',
  },
  {
    kind: 'sigtermIgnorer',
    needsCgroups: false,
    cancelAtStart: true,
    expected: ['cancelled'],
    endedBy: 'cancel grace (1 s), SIGTERM ignored, term grace (1 s), SIGKILL to the group and the cgroup',
  },
  {
    kind: 'setsidEscapee',
    needsCgroups: false,
    cancelAtStart: false,
    expected: ['completed'],
    endedBy: 'run completes; the escapee (own session) is killed by the cgroup kill / pid namespace',
  },
];
