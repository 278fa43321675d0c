/**
 * Which tenant a session or run belongs to (docs/http-api.md, "Tokens, tenants, roles").
 * Interim version of the server lane: the tenancy lane's migration 0006 adds `sessions.tenant`; until it lands
 * every session is the operator tenant's (`default`). The tenancy lane's file replaces this one at merge.
 */
import { dbOf, type Store } from './store.js';

/** The operator tenant: every object without a tenant of its own. */
const DEFAULT_TENANT = 'default';

function hasTenantColumn(store: Store): boolean {
  const columns = dbOf(store).prepare('PRAGMA table_info(sessions)').all() as { name: string }[];
  return columns.some((c) => c.name === 'tenant');
}

/** The tenant a session recorded when it was created, or undefined when there is no such session. */
export function tenantOfSession(store: Store, sessionId: string): string | undefined {
  const db = dbOf(store);
  if (hasTenantColumn(store))
    return db.prepare('SELECT tenant FROM sessions WHERE id = ?').pluck().get(sessionId) as string | undefined;
  return db.prepare('SELECT 1 FROM sessions WHERE id = ?').pluck().get(sessionId) ? DEFAULT_TENANT : undefined;
}

/** The tenant of a run: its session's. Undefined when there is no such run. */
export function tenantOfRun(store: Store, runId: string): string | undefined {
  const sessionId = dbOf(store).prepare('SELECT session_id FROM runs WHERE id = ?').pluck().get(runId) as
    string | undefined;
  return sessionId === undefined ? undefined : tenantOfSession(store, sessionId);
}
