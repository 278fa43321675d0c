/**
 * A tenant's runs and sessions a page at a time (`GET /v1/runs`, `GET /v1/sessions`): keyset paging (docs/http-api.md,
 * "Admin endpoints"; docs/decisions.md, "Issue 13 — admin-ops" O2).
 */
import { dbOf, runFilterSql, toRunRow, type RunRow, type Store } from './store.js';

/** Where a page of sessions starts: after the row with this sort time and id (the previous page's last row). */
export interface PageKey {
  at: string;
  id: string;
}

/** A run of a page, with its position in the store's insertion order (the page cursor). */
export type PagedRun = RunRow & { position: number };

/**
 * A tenant's runs, newest first, optionally by status, binding and session; `before` is the `position` of the previous
 * page's last run. The order is the rows' insertion order (rowid: runs are never deleted and every process inserts
 * through SQLite's one writer), so a run queued while a client pages is above every cursor and never enters the walk
 * — run ids are random and queue times tie within a millisecond, so neither could give that guarantee. PostgreSQL has
 * no rowid: its `runs` has a `rowid` identity column (migration 13) given out under the writer lock (PG2), so the
 * same statement means the same order there.
 */
export function runsPage(
  store: Store,
  tenant: string,
  filter: { status?: string[]; bindingId?: string; sessionId?: string; before?: number; limit: number },
): PagedRun[] {
  const { clauses, args } = runFilterSql({ ...filter, tenant });
  if (filter.before !== undefined) {
    clauses.push('rowid < ?');
    args.push(filter.before);
  }
  const rows = dbOf(store)
    .prepare(`SELECT rowid AS position, * FROM runs WHERE ${clauses.join(' AND ')} ORDER BY rowid DESC LIMIT ?`)
    .all(...args, filter.limit) as Record<string, unknown>[];
  return rows.map((r) => ({ ...toRunRow(r), position: r.position as number }));
}

/** One row of a tenant's session list: the session and when its last event was stored. */
export interface SessionListRow {
  id: string;
  bindingId: string;
  conversationKey: string;
  createdAt: string;
  lastActivityAt: string;
  pausedReason: string | null;
  runs: number;
}

/**
 * A tenant's sessions, newest activity (last stored event) first, ties by id; optionally of one binding. Activity
 * moves a session to the front, so a walk may miss a session that got an event meanwhile (it is on the next first
 * page) or, in a same-millisecond tie with the cursor, see it twice.
 */
export function sessionsPage(
  store: Store,
  tenant: string,
  filter: { bindingId?: string; before?: PageKey; limit: number },
): SessionListRow[] {
  const inner = ['tenant = ?'];
  const args: unknown[] = [tenant];
  if (filter.bindingId !== undefined) {
    inner.push('binding_id = ?');
    args.push(filter.bindingId);
  }
  const outer: string[] = [];
  if (filter.before) {
    // The alias quoted where it is referred to: PostgreSQL folds a bare name to lower case (it is quoted where set).
    outer.push('("lastActivityAt" < ? OR ("lastActivityAt" = ? AND id > ?))');
    args.push(filter.before.at, filter.before.at, filter.before.id);
  }
  // The last event by the events primary key (session_id, seq): one index probe per session.
  const sql =
    'SELECT * FROM (SELECT s.id, s.binding_id AS bindingId, s.conversation_key AS conversationKey, ' +
    's.created_at AS createdAt, s.paused_reason AS pausedReason, ' +
    'COALESCE((SELECT e.at FROM events e WHERE e.session_id = s.id ORDER BY e.seq DESC LIMIT 1), s.created_at) ' +
    'AS lastActivityAt, (SELECT count(*) FROM runs r WHERE r.session_id = s.id) AS runs ' +
    // The subquery named: PostgreSQL before 16 refuses one without an alias.
    `FROM sessions s WHERE ${inner.join(' AND ')}) AS listed ` +
    `${outer.length ? `WHERE ${outer.join(' AND ')} ` : ''}ORDER BY "lastActivityAt" DESC, id LIMIT ?`;
  return dbOf(store)
    .prepare(sql)
    .all(...args, filter.limit) as SessionListRow[];
}
