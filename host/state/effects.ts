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
  const effectId = intent(store, sessionId, runId, spec);
  let value: T;
  try {
    value = effect();
  } catch (error) {
    result(store, sessionId, runId, effectId, error);
    throw error;
  }
  result(store, sessionId, runId, effectId);
  return value;
}

/** {@link performEffect} for an effect that awaits (e.g. helper programs run off the event loop). */
export async function performEffectAsync<T>(
  store: Store,
  sessionId: string,
  runId: string | null,
  spec: EffectSpec,
  effect: () => Promise<T>,
): Promise<T> {
  const effectId = intent(store, sessionId, runId, spec);
  let value: T;
  try {
    value = await effect();
  } catch (error) {
    result(store, sessionId, runId, effectId, error);
    throw error;
  }
  result(store, sessionId, runId, effectId);
  return value;
}

/** Log (and commit) the intent of an effect; its id. */
function intent(store: Store, sessionId: string, runId: string | null, spec: EffectSpec): string {
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
  return effectId;
}

/** Log the result of an effect: succeeded, or failed with `error`'s message. */
function result(store: Store, sessionId: string, runId: string | null, effectId: string, error?: unknown): void {
  const status = error === undefined ? 'succeeded' : 'failed';
  store.append(sessionId, [
    {
      type: 'effect.result',
      runId,
      data: { effectId, status, ...(error === undefined ? {} : { detail: (error as Error).message }) },
      audit: { type: 'effect.result', actor: 'host', data: { effectId, status } },
    },
  ]);
}
