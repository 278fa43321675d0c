// The run as the API shows it (`GET /v1/runs/:id`, the rows of `GET /v1/runs`) and what the console asks of it.

/** A run: status, binding, session, outcome, times. */
export interface Run {
  id: string;
  sessionId: string;
  bindingId: string | null;
  runner: string;
  status: string;
  reason: string | null;
  queuedAt: string;
  startedAt: string | null;
  endedAt: string | null;
  usage: Record<string, unknown> | null;
}

/** A page of runs, newest first. */
export interface RunPage {
  runs: Run[];
  next: string | null;
}

/** Whether a run of `status` has not ended (it may still be cancelled). */
export const isActive = (status: string | null | undefined) => status === 'queued' || status === 'running';
