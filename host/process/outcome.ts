import type { RunResult, Usage } from '../../sdk/protocol/types.js';

/** Every way a supervised run can end. The first reason recorded wins. */
export const OUTCOME_STATUSES = [
  'completed',
  'failed',
  'cancelled',
  'timed_out',
  'quota_exceeded',
  'crashed',
  'protocol_error',
] as const;

/** How a supervised run ended. */
export type OutcomeStatus = (typeof OUTCOME_STATUSES)[number];

/** Which limit or timer decided an outcome, when one did. */
export interface OutcomeDetail {
  timeout?: 'handshake' | 'wall_clock' | 'idle' | 'cancel_grace';
  limit?: 'maxStdoutBytes' | 'maxStderrBytes' | 'maxLineBytes' | 'maxUpdates' | 'maxEventBytes';
  /** JSON-RPC error code, when a protocol error or an error answer decided it. */
  code?: number;
}

/**
 * The host limits that acted on a run, by their configuration names (docs/admin-guide.md, "Limits"): the kernel
 * killed or refused something (`memoryBytes`, `pids`, `diskBytes`, `inodes`) or the host stopped the run
 * (`wallClockMs`, `idleMs`, `handshakeTimeoutMs`, and the output limits of {@link OutcomeDetail.limit}).
 * Structured, because the outcome's reason embeds runner text and must not be parsed for it.
 */
export const LIMIT_HITS = [
  'memoryBytes',
  'pids',
  'diskBytes',
  'inodes',
  'wallClockMs',
  'idleMs',
  'handshakeTimeoutMs',
  'maxStdoutBytes',
  'maxStderrBytes',
  'maxLineBytes',
  'maxUpdates',
  'maxEventBytes',
] as const;

/** One limit that acted on a run. */
export type LimitHit = (typeof LIMIT_HITS)[number];

/** The limit a decided outcome names (a host timer or an output limit), if any. */
export function decidedLimit(detail: OutcomeDetail): LimitHit | undefined {
  if (detail.limit) return detail.limit;
  switch (detail.timeout) {
    case 'wall_clock':
      return 'wallClockMs';
    case 'idle':
      return 'idleMs';
    case 'handshake':
      return 'handshakeTimeoutMs';
    default:
      return undefined; // cancel_grace: the run was cancelled, no limit stopped it
  }
}

/** The last step of the shutdown ladder that the runner needed before it was gone. */
export type Termination = 'not_started' | 'exited' | 'shutdown' | 'stdin_closed' | 'sigterm' | 'sigkill';

/** The one shape every supervised run ends in. */
export interface RunOutcome {
  runId: string;
  status: OutcomeStatus;
  /** Human-readable: what happened, naming the limit, timer or message. */
  reason: string;
  detail: OutcomeDetail;
  /** The runner's own result, when it gave a valid one. */
  result?: RunResult;
  runner?: { name: string; version: string; protocolVersion: number };
  /** Pid of the runner process, which is also its process-group and session id (null if never started). */
  pid: number | null;
  exitCode: number | null;
  signal: string | null;
  termination: Termination;
  /** Pids of the runner's group or session still alive after the ladder; empty when all died. */
  survivors: number[];
  /**
   * The run's usage as the host metered it (model calls through its gateway), with the runner's
   * own claim under `reportedByRunner`; absent when the run never reached the point of recording.
   */
  usage?: Usage & { modelCalls?: number; meteredBy?: string; reportedByRunner?: Usage };
  /** The limits that acted on the run (each once), when any did. */
  limits?: LimitHit[];
  /** The end of stderr, redacted. */
  stderrTail: string;
  durationMs: number;
  counters: { stdoutBytes: number; stderrBytes: number; updates: number; eventBytes: number; hostRequests: number };
}

/** The outcome of a queued run that was cancelled before its runner started. */
export function notStartedOutcome(runId: string, reason: string): RunOutcome {
  return {
    runId,
    status: 'cancelled',
    reason,
    detail: {},
    pid: null,
    exitCode: null,
    signal: null,
    termination: 'not_started',
    survivors: [],
    stderrTail: '',
    durationMs: 0,
    counters: { stdoutBytes: 0, stderrBytes: 0, updates: 0, eventBytes: 0, hostRequests: 0 },
  };
}

/** Records the first decided status; later decisions are ignored ("first reason wins"). */
export class OutcomeRecorder {
  private decision: { status: OutcomeStatus; reason: string; detail: OutcomeDetail } | undefined;

  /** Record a decision; returns true when it was the first. */
  decide(status: OutcomeStatus, reason: string, detail: OutcomeDetail = {}): boolean {
    if (this.decision) return false;
    this.decision = { status, reason, detail };
    return true;
  }

  get decided(): { status: OutcomeStatus; reason: string; detail: OutcomeDetail } | undefined {
    return this.decision;
  }
}

/** Process exit code the CLI uses for each outcome (documented in docs/cli.md). */
export const OUTCOME_EXIT_CODES: Record<OutcomeStatus, number> = {
  completed: 0,
  failed: 1,
  cancelled: 130,
  timed_out: 124,
  quota_exceeded: 3,
  crashed: 4,
  protocol_error: 5,
};
