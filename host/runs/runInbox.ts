import type { ChatEvent, RunMessageResult } from '../../sdk/protocol/types.js';

/**
 * How long the host waits for a runner's answer to `run/message` before it runs the message as an ordinary run
 * instead. Bounded so a runner that never answers cannot hold a user's message; generous, because a harness runner
 * answers only once the message is written to its CLI.
 */
export const MESSAGE_ANSWER_MS = 10_000;

/**
 * The way into a running run for steering `append` (docs/approvals.md §7): there once the runner declared
 * `capabilities.append` and its `run` was sent, gone when the run's outcome is decided.
 */
export interface RunInbox {
  readonly runId: string;
  /**
   * Deliver `event` to the runner. When it is accepted, the message is recorded in the run's events (redacted) in one
   * transaction with `record` (the dispatcher's dedupe row). Never rejects for what the runner does: a refusal, no
   * answer, or a run that ended first is `accepted: false` with the reason.
   */
  deliver(event: ChatEvent, record?: () => void): Promise<RunMessageResult>;
}
