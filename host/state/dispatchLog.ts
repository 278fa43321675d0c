/** The dispatch log: accepted platform events (dedupe) and the queue reads dispatch decides on (docs/state.md). */
import { hostRunsCondition } from './claims.js';
import { dialectOf } from './db.js';
import { jsonNumber } from './dialectSql.js';
import { dbOf, type Store } from './store.js';

/** One accepted platform event and what it became. */
export interface Delivery {
  runId: string;
  sessionId: string;
  bindingId: string;
}

/**
 * The run an already accepted platform event of `tenant` became, if it was accepted before. The key is (tenant,
 * platform, bot, event id): another tenant's event with the same ids is another event, and its ids are never answered.
 */
export function findDelivery(
  store: Store,
  tenant: string,
  platform: string,
  bot: string,
  eventId: string,
): Delivery | undefined {
  return dbOf(store)
    .prepare(
      'SELECT run_id AS runId, session_id AS sessionId, binding_id AS bindingId FROM dispatched_events WHERE ' +
        'tenant = ? AND platform = ? AND bot = ? AND event_id = ?',
    )
    .get(tenant, platform, bot, eventId) as Delivery | undefined;
}

/** Remember that a platform event of `tenant` was accepted as `delivery` (call inside the queueing transaction). */
export function recordDelivery(
  store: Store,
  tenant: string,
  event: { platform: string; bot: string; id: string },
  delivery: Delivery,
): void {
  dbOf(store)
    .prepare(
      'INSERT INTO dispatched_events (tenant, platform, bot, event_id, binding_id, session_id, run_id, at) VALUES ' +
        '(?, ?, ?, ?, ?, ?, ?, ?)',
    )
    .run(
      tenant,
      event.platform,
      event.bot,
      event.id,
      delivery.bindingId,
      delivery.sessionId,
      delivery.runId,
      new Date().toISOString(),
    );
}

/**
 * Runs of every host process on this data folder that are queued and hold no claim; on a store several hosts share,
 * this host's only (its queue's bound is its memory's, {@link hostRunsCondition}).
 */
export function waitingRunsTotal(store: Store): number {
  const host = hostRunsCondition(store);
  return dbOf(store)
    .prepare(
      "SELECT count(*) FROM runs r WHERE r.status = 'queued' AND r.id NOT IN (SELECT run_id FROM run_claims) AND " +
        host.sql,
    )
    .pluck()
    .get(...host.params) as number;
}

/** Runs of `tenant`'s sessions queued without a claim, as {@link waitingRunsTotal} counts them. */
export function waitingRunsOfTenant(store: Store, tenant: string): number {
  const host = hostRunsCondition(store);
  return dbOf(store)
    .prepare(
      "SELECT count(*) FROM runs r JOIN sessions s ON s.id = r.session_id WHERE r.status = 'queued' AND " +
        `s.tenant = ? AND r.id NOT IN (SELECT run_id FROM run_claims) AND ${host.sql}`,
    )
    .pluck()
    .get(tenant, ...host.params) as number;
}

/** A session's runs that have not ended (any process), in queue order, and whether each holds its claim. */
export function liveSessionRuns(store: Store, sessionId: string): { id: string; claimed: number }[] {
  return dbOf(store)
    .prepare(
      'SELECT r.id, c.run_id IS NOT NULL AS claimed FROM runs r LEFT JOIN run_claims c ON c.run_id = r.id ' +
        "WHERE r.session_id = ? AND r.status IN ('queued', 'running') ORDER BY r.queued_seq",
    )
    .all(sessionId) as { id: string; claimed: number }[];
}

/** The highest goal revision a session's queued runs carried (0 when none). */
export function lastGoalRevision(store: Store, sessionId: string): number {
  const db = dbOf(store);
  return db
    .prepare(
      `SELECT coalesce(max(${jsonNumber(dialectOf(db), 'data', 'goalRevision')}), 0) FROM events ` +
        "WHERE session_id = ? AND type = 'run.queued'",
    )
    .pluck()
    .get(sessionId) as number;
}
