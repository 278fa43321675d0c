/**
 * Steering `append` across host processes and hosts (docs/approvals.md §7, docs/scale-out.md §4): a host that received
 * a message for a run another process or host runs asks that run's owner through the store (`run_messages`), and the
 * owner hands it to its runner and answers. No host needs another's address; a notification only wakes.
 */
import type { ChatEvent } from '../../sdk/protocol/types.js';
import { notStartedOutcome, OUTCOME_STATUSES, type OutcomeStatus, type RunOutcome } from '../process/outcome.js';
import { MESSAGE_ANSWER_MS } from '../runs/runInbox.js';
import { ownerLive } from '../state/claims.js';
import { runStatus } from '../state/recoveryReads.js';
import { askStatus, insertAsk, moveAsk } from '../state/runMessages.js';
import type { Store } from '../state/store.js';

/** How long the owner has to take an ask (its watcher wakes on the notification, or polls within 200 ms). */
export const ASK_TAKE_MS = 5_000;
/**
 * How long, once it took the ask, the owner has to answer before the asker looks whether it is gone: its runner's
 * bound and a margin. A live owner is waited for past it (its lease bounds that wait).
 */
export const ASK_ANSWER_MS = MESSAGE_ANSWER_MS + 5_000;

/** The owner's answer to an ask, or why there was none; `existing`: another host asked with the same event first. */
export type AskAnswer = { existing: boolean } & (
  { accepted: true } | { accepted: false; code: 'refused' | 'other_process'; reason: string }
);

/**
 * Ask the host process that runs `runId` to hand `event` to its runner, and wait for its answer. An ask the owner did
 * not take within {@link ASK_TAKE_MS} is withdrawn (the owner can no longer take it) and the message runs as a run of
 * its own; so does one the owner took and did not answer within {@link ASK_ANSWER_MS} once the owner is gone (it died
 * meanwhile: its run is interrupted). Never rejects for what the owner does.
 */
export async function askRunningHost(
  store: Store,
  ask: { runId: string; sessionId: string; tenant: string; event: ChatEvent },
  askedBy: string,
): Promise<AskAnswer> {
  const { id, existing } = insertAsk(store, ask, askedBy);
  const takeBy = performance.now() + ASK_TAKE_MS;
  let answerBy: number | undefined;
  for (;;) {
    const row = askStatus(store, id);
    const now = performance.now();
    if (row?.status === 'accepted') return { existing, accepted: true };
    if (row?.status === 'refused')
      return { existing, accepted: false, code: 'refused', reason: row.reason ?? 'no reason given' };
    if (row === undefined || row.status === 'withdrawn')
      return { existing, accepted: false, code: 'other_process', reason: `its ask to run ${ask.runId} was withdrawn` };
    if (row.status === 'pending' && now > takeBy && moveAsk(store, id, 'pending', 'withdrawn'))
      return {
        existing,
        accepted: false,
        code: 'other_process',
        reason: `the host process running run ${ask.runId} did not take it within ${ASK_TAKE_MS} ms`,
      };
    if (row.status === 'delivering') {
      answerBy ??= now + ASK_ANSWER_MS;
      // Past the bound, given up only once its owner is gone (its run ended, or its lease or process is): a stalled
      // owner that comes back answers, and its runner may have the message already.
      if (now > answerBy && ownerGone(store, ask.runId) && moveAsk(store, id, 'delivering', 'withdrawn'))
        return {
          existing,
          accepted: false,
          code: 'other_process',
          reason: `the host process running run ${ask.runId} took it and stopped before it answered`,
        };
    }
    await nextControlChange(store, 100);
  }
}

/**
 * The end of a run another process or host runs, read from the store (a steering-`append` ticket's `done`): its
 * status as recorded (`interrupted` is `crashed` here: its host stopped), the rest of the outcome left at "not
 * started here" — its result and usage are that host's, in the run's events. Never rejects.
 */
export async function runEndFromStore(store: Store, runId: string): Promise<RunOutcome> {
  for (;;) {
    let status: string | undefined;
    try {
      status = store.isClosed ? 'unknown' : runStatus(store, runId);
    } catch {
      status = undefined; // the store unreachable a moment: read again
    }
    if (status !== undefined && status !== 'queued' && status !== 'running') {
      const outcome = (OUTCOME_STATUSES as readonly string[]).includes(status) ? (status as OutcomeStatus) : 'crashed';
      return { ...notStartedOutcome(runId, `run ${runId} ended ${status} on the host that ran it`), status: outcome };
    }
    // Not unref'd: a one-off command (`paddock dispatch`) whose run another host runs waits here for its end; a
    // stopping server's wait ends at the next look, which finds the store closed.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}

/** Whether run `runId` is over, or its owner (host process, or host by its lease) is gone. */
function ownerGone(store: Store, runId: string): boolean {
  const run = store.run(runId);
  return !run || run.status !== 'running' || !ownerLive(store, run);
}

/** Resolves at the next commit another connection made to `controls` that is heard, or after `ms` (SQLite polls). */
function nextControlChange(store: Store, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      stop();
      resolve();
    };
    const timer = setTimeout(done, ms);
    const stop = store.commits.onChange('controls', done);
  });
}
