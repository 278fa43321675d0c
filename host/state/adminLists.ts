/**
 * A tenant's runs and sessions a page at a time (`GET /v1/runs`, `GET /v1/sessions`): keyset paging, so a page never
 * repeats or skips a row because rows were added meanwhile (docs/http-api.md, "Admin endpoints").
 */
import { dbOf, toRunRow, type RunRow, type Store } from './store.js';

/** Where a page starts: after the row with this sort time and id (the last row of the previous page). */
export interface PageKey {
  at: string;
  id: string;
}

/** A tenant's runs, newest queued first (ties by id), optionally by status, binding and session. */
export function runsPage(
  store: Store,
  tenant: string,
  filter: { status?: string[]; bindingId?: string; sessionId?: string; before?: PageKey; limit: number },
): RunRow[] {
  const clauses = ['session_id IN (SELECT id FROM sessions WHERE tenant = ?)'];
  const args: unknown[] = [tenant];
  if (filter.status?.length) {
    clauses.push(`status IN (${filter.status.map(() => '?').join(',')})`);
    args.push(...filter.status);
  }
  if (filter.bindingId !== undefined) {
    clauses.push('binding_id = ?');
    args.push(filter.bindingId);
  }
  if (filter.sessionId !== undefined) {
    clauses.push('session_id = ?');
    args.push(filter.sessionId);
  }
  if (filter.before) {
    clauses.push('(queued_at < ? OR (queued_at = ? AND id > ?))');
    args.push(filter.before.at, filter.before.at, filter.before.id);
  }
  const rows = dbOf(store)
    .prepare(`SELECT * FROM runs WHERE ${clauses.join(' AND ')} ORDER BY queued_at DESC, id LIMIT ?`)
    .all(...args, filter.limit) as Record<string, unknown>[];
  return rows.map(toRunRow);
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

/** A tenant's sessions, newest activity (last stored event) first, ties by id; optionally of one binding. */
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
    outer.push('(lastActivityAt < ? OR (lastActivityAt = ? AND id > ?))');
    args.push(filter.before.at, filter.before.at, filter.before.id);
  }
  // The last event by the events primary key (session_id, seq): one index probe per session.
  const sql =
    'SELECT * FROM (SELECT s.id, s.binding_id AS bindingId, s.conversation_key AS conversationKey, ' +
    's.created_at AS createdAt, s.paused_reason AS pausedReason, ' +
    'COALESCE((SELECT e.at FROM events e WHERE e.session_id = s.id ORDER BY e.seq DESC LIMIT 1), s.created_at) ' +
    'AS lastActivityAt, (SELECT count(*) FROM runs r WHERE r.session_id = s.id) AS runs ' +
    `FROM sessions s WHERE ${inner.join(' AND ')}) ` +
    `${outer.length ? `WHERE ${outer.join(' AND ')} ` : ''}ORDER BY lastActivityAt DESC, id LIMIT ?`;
  return dbOf(store)
    .prepare(sql)
    .all(...args, filter.limit) as SessionListRow[];
}
