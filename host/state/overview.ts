/**
 * A tenant's dashboard figures (`GET /v1/overview`, docs/http-api.md "Console endpoints"): each one indexed query over
 * the store, so the answer stays cheap however many runs the store holds (test/integration/serveConsoleApi.test.ts
 * checks the plans).
 */
import { dbOf, type Store } from './store.js';

/** How far back the overview counts ended runs. */
export const OVERVIEW_WINDOW_MS = 24 * 60 * 60 * 1000;

/** The counts of {@link tenantOverview}. */
export interface TenantCounts {
  /** Runs that ended at or after `since`, by their final status (`succeeded`, `failed`, `interrupted`…). */
  ended: { since: string; byOutcome: Record<string, number>; total: number };
  /** Runs running now (held by a host process of the data folder). */
  running: number;
  /** Runs waiting for their turn. */
  queued: number;
  /** Approvals that wait for a person and have not expired. */
  pendingApprovals: number;
}

/** The SQL of each figure, exported so a test can read their query plans. */
export const OVERVIEW_SQL = {
  // runs_by_end: the window's rows only; the session's tenant by its primary key.
  ended:
    'SELECT status, count(*) AS n FROM runs WHERE ended_at >= ? ' +
    'AND session_id IN (SELECT id FROM sessions WHERE tenant = ?) GROUP BY status',
  // runs_by_status_session (migration 13): the index entries of runs in that status only.
  inStatus: 'SELECT count(*) FROM runs WHERE status = ? AND session_id IN (SELECT id FROM sessions WHERE tenant = ?)',
  // approvals_by_tenant_status.
  pending: "SELECT count(*) FROM approvals WHERE tenant = ? AND status = 'pending' AND expires_at > ?",
} as const;

/** `tenant`'s figures at `now`. */
export function tenantOverview(store: Store, tenant: string, now = new Date()): TenantCounts {
  const db = dbOf(store);
  const since = new Date(now.getTime() - OVERVIEW_WINDOW_MS).toISOString();
  const rows = db.prepare(OVERVIEW_SQL.ended).all(since, tenant) as { status: string; n: number }[];
  const byOutcome = Object.fromEntries(rows.map((r) => [r.status, r.n]));
  const count = (sql: string, ...args: unknown[]) =>
    db
      .prepare(sql)
      .pluck()
      .get(...args) as number;
  return {
    ended: { since, byOutcome, total: rows.reduce((sum, r) => sum + r.n, 0) },
    running: count(OVERVIEW_SQL.inStatus, 'running', tenant),
    queued: count(OVERVIEW_SQL.inStatus, 'queued', tenant),
    pendingApprovals: count(OVERVIEW_SQL.pending, tenant, now.toISOString()),
  };
}
