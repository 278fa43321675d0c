/** The reads start-up recovery decides on (docs/state.md, "Recovery"). */
import { dialectOf } from './db.js';
import { jsonText } from './dialectSql.js';
import { dbOf, type Store } from './store.js';

/** The data of a run's `run.started` event as stored (JSON text), if it started. */
export function runStartedData(store: Store, runId: string): string | undefined {
  // `type <> 'run.update'` names the partial index events_by_run_except_updates (migration 15) for SQLite to use.
  return dbOf(store)
    .prepare("SELECT data FROM events WHERE run_id = ? AND type = 'run.started' AND type <> 'run.update'")
    .pluck()
    .get(runId) as string | undefined;
}

/** A run's current status in the `runs` view table (read inside the transaction that acts on it). */
export function runStatus(store: Store, runId: string): string | undefined {
  return dbOf(store).prepare('SELECT status FROM runs WHERE id = ?').pluck().get(runId) as string | undefined;
}

/** Every `effect.intent` with no result, reconciliation or resolution yet, by session and seq. */
export function openEffectIntents(store: Store): { sessionId: string; runId: string | null; data: string }[] {
  const db = dbOf(store);
  const effectId = (alias: string) => jsonText(dialectOf(db), `${alias}.data`, 'effectId');
  return db
    .prepare(
      `SELECT i.session_id AS sessionId, i.run_id AS runId, i.data AS data FROM events i
       WHERE i.type LIKE 'effect.%' AND i.type = 'effect.intent' AND NOT EXISTS (
         SELECT 1 FROM events r WHERE ${effectId('r')} = ${effectId('i')}
           AND r.type LIKE 'effect.%' AND r.type IN ('effect.result', 'effect.reconciled', 'effect.resolved'))
       ORDER BY i.session_id, i.seq`,
    )
    .all() as { sessionId: string; runId: string | null; data: string }[];
}

/** Whether effect `effectId` of `sessionId` has a result, a reconciliation or a resolution (no longer open). */
export function effectClosed(store: Store, sessionId: string, effectId: string): boolean {
  const db = dbOf(store);
  return (
    db
      .prepare(
        `SELECT 1 FROM events WHERE session_id = ? AND type LIKE 'effect.%' AND type IN ('effect.result', ` +
          `'effect.reconciled', 'effect.resolved') AND ${jsonText(dialectOf(db), 'data', 'effectId')} = ?`,
      )
      .get(sessionId, effectId) !== undefined
  );
}

/**
 * Intents of effects of `hostId`'s runs that another host's takeover reconciled as `unknown` or `still_running` (it
 * could not see this host's disk) and that nobody decided since (no result, no resolution): this host, back, can
 * probe them on its own disk. By session and seq.
 */
export function effectsLeftUndecidedOf(
  store: Store,
  hostId: string,
): { sessionId: string; runId: string | null; data: string }[] {
  const db = dbOf(store);
  const effectId = (alias: string) => jsonText(dialectOf(db), `${alias}.data`, 'effectId');
  return db
    .prepare(
      `SELECT i.session_id AS sessionId, i.run_id AS runId, i.data AS data FROM events i
       JOIN runs ru ON ru.id = i.run_id
       WHERE i.type LIKE 'effect.%' AND i.type = 'effect.intent' AND ru.owner_host = ? AND EXISTS (
         SELECT 1 FROM events c WHERE ${effectId('c')} = ${effectId('i')}
           AND c.type LIKE 'effect.%' AND c.type = 'effect.reconciled'
           AND ${jsonText(dialectOf(db), 'c.data', 'status')} IN ('unknown', 'still_running'))
       AND NOT EXISTS (
         SELECT 1 FROM events r WHERE ${effectId('r')} = ${effectId('i')}
           AND r.type LIKE 'effect.%' AND r.type IN ('effect.result', 'effect.resolved'))
       ORDER BY i.session_id, i.seq`,
    )
    .all(hostId) as { sessionId: string; runId: string | null; data: string }[];
}
