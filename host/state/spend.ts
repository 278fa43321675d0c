/**
 * A tenant's model spend over the window the per-day budgets count (`GET /v1/spend`, docs/http-api.md "Console
 * endpoints"; docs/gateway.md "Budgets"): the metered calls of the tenant's sessions, and the reservations of its
 * runs' calls in flight. Each query is bounded by the window or by the calls in flight, never by the store's history
 * (test/unit/state/spend.test.ts checks the plans).
 */
import { dbOf, type Store } from './store.js';

/** The window of the per-day budgets (host/gateway/modelBudget.ts: calls with `at_ms` after now minus this). */
export const SPEND_WINDOW_MS = 86_400_000;

/** The calls of one binding to one model in the window. */
export interface SpendRow {
  bindingId: string;
  modelId: string;
  calls: number;
  /** Calls answered with an error status (refusals included: they cost nothing). */
  failedCalls: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
}

/** What calls in flight of one binding hold (their worst case: input estimate + max output). */
export interface ReservedRow {
  bindingId: string;
  tokens: number;
  costUsd: number;
  calls: number;
}

/** The SQL of each read, exported so a test can read their query plans. */
export const SPEND_SQL = {
  // gateway_calls_window (migration 14), covering: the window's entries only, then each one's session by its key for
  // the tenant (a binding id can be reused by another tenant: the binding id alone does not say whose a call was).
  // CROSS JOIN keeps that order: without statistics the planner would start from all the tenant's sessions.
  calls:
    'SELECT c.binding_id AS bindingId, c.model_id AS modelId, count(*) AS calls, ' +
    // count … FILTER, not sum(<boolean>): PostgreSQL sums no booleans. INDEXED BY and CROSS JOIN are SQLite's planner
    // hints, dropped for PostgreSQL by its adapter (pg/translate.ts).
    'count(*) FILTER (WHERE c.status >= 400) AS failedCalls, sum(c.input_tokens) AS inputTokens, ' +
    'sum(c.output_tokens) AS outputTokens, ' +
    'sum(c.cost_usd) AS costUsd FROM gateway_calls c INDEXED BY gateway_calls_window ' +
    'CROSS JOIN sessions s ON s.id = c.session_id WHERE c.at_ms > ? AND s.tenant = ? ' +
    'GROUP BY c.binding_id, c.model_id ORDER BY c.binding_id, c.model_id',
  // Every reservation (calls in flight of every tenant: few), each one's run and session by their keys.
  reserved:
    'SELECT g.binding_id AS bindingId, sum(g.tokens) AS tokens, sum(g.cost_usd) AS costUsd, count(*) AS calls ' +
    'FROM gateway_reservations g CROSS JOIN runs r ON r.id = g.run_id CROSS JOIN sessions s ON s.id = r.session_id ' +
    'WHERE s.tenant = ? GROUP BY g.binding_id ORDER BY g.binding_id',
} as const;

/** `tenant`'s calls in the window ending at `nowMs` (by binding and model) and its reservations (by binding). */
export function tenantSpend(
  store: Store,
  tenant: string,
  nowMs = Date.now(),
): { sinceMs: number; calls: SpendRow[]; reserved: ReservedRow[] } {
  const db = dbOf(store);
  const sinceMs = nowMs - SPEND_WINDOW_MS;
  return {
    sinceMs,
    calls: db.prepare(SPEND_SQL.calls).all(sinceMs, tenant) as SpendRow[],
    reserved: db.prepare(SPEND_SQL.reserved).all(tenant) as ReservedRow[],
  };
}
