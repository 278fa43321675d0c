import { getMaxListeners, setMaxListeners } from 'node:events';
import type { ApprovalAnswer, ApprovalPort, PendingApproval } from './runPolicy.js';

/**
 * Waits one signal may hold at once: a run may keep up to 16 asks pending, each waiting on the run's signal, so Node's
 * default of 10 listeners warned of a leak that is not one (outside attack on issue 15, finding 7).
 */
const WAITS_PER_SIGNAL = 64;

/**
 * Wait until a person decides, the approval expires, its request or run ends (which voids it), or a lasting grant
 * made meanwhile covers the action (`coveredNow`: the approval is voided as no longer asked, and the grant's answer
 * given — so the twin asks of parallel requests end with the first approval that grants their scope).
 */
export async function waitForDecision(
  port: ApprovalPort,
  pending: PendingApproval,
  signal: AbortSignal | undefined,
  pollMs: number,
  now: () => Date,
  coveredNow?: () => Omit<ApprovalAnswer, 'approvalId' | 'action'> | undefined,
): Promise<Omit<ApprovalAnswer, 'approvalId' | 'action'>> {
  const expiresAt = Date.parse(pending.expiresAt);
  if (signal && getMaxListeners(signal) < WAITS_PER_SIGNAL) setMaxListeners(WAITS_PER_SIGNAL, signal);
  for (;;) {
    const state = settle(port, pending, signal, now, expiresAt);
    if (state) return state;
    const covered = coveredNow?.();
    // Voided only while still pending: a decision made meanwhile stands, and is read on the next turn.
    if (covered && port.void(pending.id, now().toISOString(), `no longer asked: ${covered.reason}`)?.status === 'void')
      return covered;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, Math.max(1, Math.min(pollMs, expiresAt - now().getTime() + 1)));
      signal?.addEventListener('abort', done, { once: true });
      // A decision made in another process or on another host wakes the wait at once (the poll stays the fallback).
      const stopWatching = port.onChange?.(done);
      function done() {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        stopWatching?.();
        resolve();
      }
    });
  }
}

/** The approval's answer if it has one now (deciding expiry and the run's end here), else undefined. */
function settle(
  port: ApprovalPort,
  pending: PendingApproval,
  signal: AbortSignal | undefined,
  now: () => Date,
  expiresAt: number,
): Omit<ApprovalAnswer, 'approvalId' | 'action'> | undefined {
  const at = now();
  let state = port.state(pending.id);
  if (state?.status === 'pending' && signal?.aborted)
    state = port.void(pending.id, at.toISOString(), 'its request ended (the run ended, or the runner gave it up)');
  if (state?.status === 'pending' && at.getTime() >= expiresAt) state = port.expire(pending.id, at.toISOString());
  if (!state) return { decision: 'denied', by: 'host', reason: `approval ${pending.id} is gone from the store` };
  switch (state.status) {
    case 'pending':
      return undefined;
    case 'approved':
      return {
        decision: 'approved',
        by: state.decidedBy ?? 'approver',
        reason: state.reason ?? `approved by ${state.decidedBy ?? 'an approver'}`,
        ...(state.grantId ? { grantId: state.grantId } : {}),
      };
    case 'denied':
      return {
        decision: 'denied',
        by: state.decidedBy ?? 'approver',
        reason: state.reason ?? `denied by ${state.decidedBy ?? 'an approver'}`,
      };
    case 'expired':
      return { decision: 'denied', by: 'host', reason: `nobody decided within ${timeoutWords(pending)}: denied` };
    case 'void':
      return { decision: 'denied', by: 'host', reason: state.reason ?? 'the run ended before anybody decided' };
  }
}

function timeoutWords(pending: PendingApproval): string {
  const ms = Date.parse(pending.expiresAt) - Date.parse(pending.createdAt);
  return ms % 60_000 === 0 ? `${ms / 60_000} min` : `${Math.round(ms / 1000)} s`;
}
