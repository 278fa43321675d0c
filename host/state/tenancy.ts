/** Which tenant a session or run belongs to, and a tenant's sessions and runs (docs/state.md, "Tenants"). */
import { dbOf, type RunRow, type Store } from './store.js';

/** The tenant a session recorded when it was created, or undefined when there is no such session. */
export function tenantOfSession(store: Store, sessionId: string): string | undefined {
  return dbOf(store).prepare('SELECT tenant FROM sessions WHERE id = ?').pluck().get(sessionId) as string | undefined;
}

/** The tenant of a run: its session's. Undefined when there is no such run. */
export function tenantOfRun(store: Store, runId: string): string | undefined {
  return dbOf(store)
    .prepare('SELECT s.tenant FROM runs r JOIN sessions s ON s.id = r.session_id WHERE r.id = ?')
    .pluck()
    .get(runId) as string | undefined;
}

/** One row of a tenant's session list. */
export interface SessionRow {
  id: string;
  tenant: string;
  bindingId: string;
  conversationKey: string;
  createdAt: string;
  pausedReason: string | null;
}

/** A tenant's sessions, newest first, optionally of one binding; `before` (a createdAt) pages back. */
export function sessionsOfTenant(
  store: Store,
  tenant: string,
  filter: { bindingId?: string; before?: string; limit?: number } = {},
): SessionRow[] {
  const clauses = ['tenant = ?'];
  const args: unknown[] = [tenant];
  if (filter.bindingId !== undefined) {
    clauses.push('binding_id = ?');
    args.push(filter.bindingId);
  }
  if (filter.before !== undefined) {
    clauses.push('created_at < ?');
    args.push(filter.before);
  }
  return dbOf(store)
    .prepare(
      'SELECT id, tenant, binding_id AS bindingId, conversation_key AS conversationKey, created_at AS createdAt, ' +
        `paused_reason AS pausedReason FROM sessions WHERE ${clauses.join(' AND ')} ORDER BY created_at DESC, id ` +
        'LIMIT ?',
    )
    .all(...args, filter.limit ?? 100) as SessionRow[];
}

/** A tenant's runs, newest first (the store's run list filtered by the tenant of each run's session). */
export function runsOfTenant(
  store: Store,
  tenant: string,
  filter: { status?: string[]; bindingId?: string; limit?: number } = {},
): RunRow[] {
  return store.runs({ ...filter, tenant });
}
