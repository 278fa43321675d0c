// Many asks of one run wait on the run's one signal (a run may keep 16 pending): no listener-leak warning, every
// wait ends when the signal aborts, and no listener is left on the signal after (outside attack on issue 15, F7).
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { waitForDecision } from '../../../host/policy/approvalWait.js';
import type { ApprovalPort, ApprovalState, PendingApproval } from '../../../host/policy/runPolicy.js';

/** Fake port (named): approvals held in a map; the store's side is tested in test/unit/state/approvals.test.ts. */
function fakePort(): ApprovalPort & { states: Map<string, ApprovalState> } {
  const states = new Map<string, ApprovalState>();
  const end = (id: string, status: ApprovalState['status']) => {
    if (states.get(id)?.status === 'pending') states.set(id, { status });
    return states.get(id);
  };
  return {
    states,
    state: (id: string) => states.get(id),
    expire: (id: string) => end(id, 'expired'),
    void: (id: string) => end(id, 'void'),
  } as unknown as ApprovalPort & { states: Map<string, ApprovalState> };
}

describe('waitForDecision on one shared signal', () => {
  it('20 waits on one signal: no MaxListenersExceededWarning, all end when it aborts, no listener left', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    try {
      const port = fakePort();
      const run = new AbortController();
      const now = () => new Date();
      const waits = Array.from({ length: 20 }, (_, i) => {
        const pending = { id: `apr_${i}`, expiresAt: new Date(Date.now() + 60_000).toISOString() } as PendingApproval;
        port.states.set(pending.id, { status: 'pending' });
        return waitForDecision(port, pending, run.signal, 60_000, now);
      });
      // Every wait is now parked on the signal (its first poll is a minute away).
      await new Promise((resolve) => setImmediate(resolve));
      expect(getEventListeners(run.signal, 'abort')).toHaveLength(20);
      run.abort();
      const answers = await Promise.all(waits);
      expect(answers.every((a) => a.decision === 'denied')).toBe(true);
      expect(getEventListeners(run.signal, 'abort')).toHaveLength(0);
      // A warning is emitted on the next tick of the one that crossed the limit.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings).not.toContain('MaxListenersExceededWarning');
    } finally {
      process.off('warning', onWarning);
    }
  });
});
