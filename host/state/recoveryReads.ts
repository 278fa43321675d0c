/** The reads start-up recovery decides on (docs/state.md, "Recovery"). */
import { dialectOf } from './db.js';
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
  // The effect id as the events_effects index holds it (docs/scale-out.md §2: one form per dialect).
  const effectId = (alias: string) =>
    dialectOf(db) === 'postgres' ? `(${alias}.data::json ->> 'effectId')` : `json_extract(${alias}.data, '$.effectId')`;
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
