import { existingHostId } from '../state/hostLeases.js';
import { effectsLeftUndecidedOf } from '../state/recoveryReads.js';
import type { Store } from '../state/store.js';
import { probeEffect, PROBERS, type Prober } from './probes.js';

/** What {@link settleEffectsLeftByTakeover} decided: each effect it could probe, and the sessions that resumed. */
export interface SettledEffects {
  effects: { effectId: string; sessionId: string; status: 'succeeded' | 'failed'; how: string }[];
  resumedSessions: string[];
}

/**
 * A host back on its data folder settles what another host's takeover could not see (docs/scale-out.md §4, "A dead
 * host"): each effect of this folder's runs that the taker reconciled `unknown` (or `still_running`) and nobody
 * decided since is probed on this disk. A definite verdict is recorded as `effect.resolved` by this host's recovery,
 * and a paused session left with no open effect resumes — what `paddock runs resolve` does for a human. An effect
 * still unknown here stays for a human. Only on a store several hosts share (a takeover exists only there).
 */
export function settleEffectsLeftByTakeover(store: Store, probers: Record<string, Prober> = PROBERS): SettledEffects {
  const settled: SettledEffects = { effects: [], resumedSessions: [] };
  const hostId = store.shared ? existingHostId(store.dataDir) : undefined;
  if (!hostId) return settled;
  const by = `recovery on host ${hostId}`;
  const bySession = new Map<string, { sessionId: string; runId: string | null; data: string }[]>();
  for (const row of effectsLeftUndecidedOf(store, hostId))
    bySession.set(row.sessionId, [...(bySession.get(row.sessionId) ?? []), row]);
  for (const [sessionId, rows] of bySession) {
    store.transaction(() => {
      let decided = 0;
      for (const row of rows) {
        const intent = JSON.parse(row.data) as { effectId: string; kind: string; probe: Record<string, unknown> };
        // Another process of this folder may have settled it meanwhile: decide only what is still open.
        if (!store.sessionControl(sessionId).openEffects.some((e) => e.effectId === intent.effectId)) continue;
        const verdict = probeEffect(intent.kind, intent.probe, probers, store.dataDir);
        if (verdict.status !== 'succeeded' && verdict.status !== 'failed') continue;
        store.append(sessionId, [
          {
            type: 'effect.resolved',
            runId: row.runId,
            data: { effectId: intent.effectId, status: verdict.status, by },
            audit: {
              type: 'recovery.effect_resolved',
              actor: 'host',
              data: { effectId: intent.effectId, kind: intent.kind, status: verdict.status, how: verdict.how },
            },
          },
        ]);
        settled.effects.push({ effectId: intent.effectId, sessionId, status: verdict.status, how: verdict.how });
        decided += 1;
      }
      const control = store.sessionControl(sessionId);
      if (decided > 0 && control.paused !== null && control.openEffects.length === 0) {
        store.append(sessionId, [
          { type: 'session.resumed', data: { by }, audit: { type: 'session.resumed', actor: 'host', data: {} } },
        ]);
        settled.resumedSessions.push(sessionId);
      }
    });
  }
  return settled;
}
