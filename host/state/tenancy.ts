/** Which tenant a session (and so its runs) belongs to (docs/http-api.md, "Tokens, tenants, roles"). */
import { dbOf, type Store } from './store.js';

// Placeholder by the webhooks lane until the tenancy lane's version lands (its migration adds
// `sessions.tenant`): before that column exists every session is the operator tenant's.
/** The tenant of a session, or undefined when there is no such session. */
export function tenantOfSession(store: Store, sessionId: string): string | undefined {
  const db = dbOf(store);
  const hasTenant = (db.pragma('table_info(sessions)') as { name: string }[]).some((c) => c.name === 'tenant');
  const row = db
    .prepare(`SELECT ${hasTenant ? 'tenant' : "'default'"} AS tenant FROM sessions WHERE id = ?`)
    .get(sessionId) as { tenant: string | null } | undefined;
  return row ? (row.tenant ?? 'default') : undefined;
}
