import { randomUUID } from 'node:crypto';
import type { Store } from './store.js';

/** A host-side effect: what it is, on what, and what a prober needs to check it after a crash. */
export interface EffectSpec {
  kind: string;
  target: string;
  probe: Record<string, unknown>;
}

/**
 * Perform a non-idempotent host-side effect with an intent logged (and committed) before and a
 * result after, so a crash in between is found and reconciled at the next start, never re-run
 * blindly (docs/state.md, rule 4).
 */
export function performEffect<T>(
  store: Store,
  sessionId: string,
  runId: string | null,
  spec: EffectSpec,
  effect: () => T,
): T {
  const effectId = `eff_${randomUUID()}`;
  store.append(sessionId, [
    {
      type: 'effect.intent',
      runId,
      data: { effectId, ...spec },
      audit: { type: 'effect.intent', actor: 'host', data: { effectId, kind: spec.kind, target: spec.target } },
    },
  ]);
  store.afterEffectIntent();
  let value: T;
  try {
    value = effect();
  } catch (error) {
    store.append(sessionId, [
      {
        type: 'effect.result',
        runId,
        data: { effectId, status: 'failed', detail: (error as Error).message },
        audit: { type: 'effect.result', actor: 'host', data: { effectId, status: 'failed' } },
      },
    ]);
    throw error;
  }
  store.append(sessionId, [
    {
      type: 'effect.result',
      runId,
      data: { effectId, status: 'succeeded' },
      audit: { type: 'effect.result', actor: 'host', data: { effectId, status: 'succeeded' } },
    },
  ]);
  return value;
}
