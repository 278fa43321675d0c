/**
 * The `capability_grants` table (docs/approvals.md §3): what an approval with a lasting lifetime leaves behind,
 * exactly the approval's effect and target. Called "capability grants" in code, so they are never confused with what a
 * binding's `grants:` give its runs (host/bindings/schema.ts); the CLI and API call them `grants`.
 */
import { randomUUID } from 'node:crypto';
import type { CapabilityGrant, Effect, GrantLifetime, ScopeKind } from '../policy/actions.js';
import { dbOf, type Store } from './store.js';

/** A stored capability grant: the shared type, plus the approval it came from and who revoked it. */
export interface CapabilityGrantRow extends CapabilityGrant {
  approvalId?: string;
  revokedBy?: string;
}

/** What {@link insertCapabilityGrant} stores: a grant without its id and creation time (given or made). */
export type NewCapabilityGrant = Omit<CapabilityGrantRow, 'id' | 'createdAt' | 'revokedAt' | 'revokedBy' | 'usedAt'> & {
  id?: string;
  createdAt?: string;
};

/** The lifetimes, shortest first: a grant may live only as long as asked, never longer. */
export const GRANT_LIFETIMES: readonly GrantLifetime[] = ['once', 'run', 'session', 'binding'];

interface GrantSqlRow {
  id: string;
  tenant: string;
  binding_id: string;
  session_id: string | null;
  run_id: string | null;
  capability: Effect;
  scope_kind: ScopeKind;
  scope_value: string;
  lifetime: GrantLifetime;
  grantor: string;
  approval_id: string | null;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  revoked_by: string | null;
  used_at: string | null;
}

/** Null columns become absent fields (the shared type's optional ones). */
function toGrant(r: GrantSqlRow): CapabilityGrantRow {
  const grant: CapabilityGrantRow = {
    id: r.id,
    capability: r.capability,
    scope: { kind: r.scope_kind, value: r.scope_value },
    lifetime: r.lifetime,
    tenant: r.tenant,
    bindingId: r.binding_id,
    grantor: r.grantor,
    createdAt: r.created_at,
  };
  if (r.session_id !== null) grant.sessionId = r.session_id;
  if (r.run_id !== null) grant.runId = r.run_id;
  if (r.approval_id !== null) grant.approvalId = r.approval_id;
  if (r.expires_at !== null) grant.expiresAt = r.expires_at;
  if (r.revoked_at !== null) grant.revokedAt = r.revoked_at;
  if (r.revoked_by !== null) grant.revokedBy = r.revoked_by;
  if (r.used_at !== null) grant.usedAt = r.used_at;
  return grant;
}

/** The grant `id`, of `tenant` when given. */
export function capabilityGrantById(store: Store, id: string, tenant?: string): CapabilityGrantRow | undefined {
  const row = dbOf(store).prepare('SELECT * FROM capability_grants WHERE id = ?').get(id) as GrantSqlRow | undefined;
  if (!row || (tenant !== undefined && row.tenant !== tenant)) return undefined;
  return toGrant(row);
}

/**
 * Store a capability grant and audit it (`grant.created`, actor the grantor), in one transaction (joining the
 * caller's). A `session` grant needs its session, a `run` or `once` grant its session and run: else `RangeError`.
 */
export function insertCapabilityGrant(store: Store, grant: NewCapabilityGrant): CapabilityGrantRow {
  if (!GRANT_LIFETIMES.includes(grant.lifetime))
    throw new RangeError(
      `lifetime must be one of ${GRANT_LIFETIMES.join(', ')} (got ${JSON.stringify(grant.lifetime)})`,
    );
  if (grant.lifetime !== 'binding' && !grant.sessionId)
    throw new RangeError(`sessionId is required for a ${grant.lifetime} grant`);
  if ((grant.lifetime === 'run' || grant.lifetime === 'once') && !grant.runId)
    throw new RangeError(`runId is required for a ${grant.lifetime} grant`);
  const id = grant.id ?? `grt_${randomUUID()}`;
  const createdAt = grant.createdAt ?? new Date().toISOString();
  return store.transaction(() => {
    dbOf(store)
      .prepare(
        'INSERT INTO capability_grants (id, tenant, binding_id, session_id, run_id, capability, scope_kind, ' +
          'scope_value, lifetime, grantor, approval_id, created_at, expires_at) ' +
          'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      )
      .run(
        id,
        grant.tenant,
        grant.bindingId,
        grant.lifetime === 'binding' ? null : grant.sessionId,
        grant.lifetime === 'run' || grant.lifetime === 'once' ? grant.runId : null,
        grant.capability,
        grant.scope.kind,
        grant.scope.value,
        grant.lifetime,
        grant.grantor,
        grant.approvalId ?? null,
        createdAt,
        grant.expiresAt ?? null,
      );
    const row = capabilityGrantById(store, id)!;
    store.audit.append(
      {
        type: 'grant.created',
        actor: grant.grantor,
        sessionId: row.sessionId ?? null,
        runId: row.runId ?? null,
        data: {
          grantId: id,
          tenant: row.tenant,
          bindingId: row.bindingId,
          capability: row.capability,
          scope: row.scope,
          lifetime: row.lifetime,
          approvalId: row.approvalId ?? null,
          expiresAt: row.expiresAt ?? null,
        },
      },
      createdAt,
    );
    return row;
  });
}

/** The SQL condition of a live grant at `?` (not revoked, not used, not expired). */
const LIVE = 'revoked_at IS NULL AND used_at IS NULL AND (expires_at IS NULL OR expires_at > ?)';

/**
 * The grants a run may use now: of its tenant and binding, live, and in scope — a `binding` grant for any session of
 * the binding, a `session` grant for its session, a `run` or `once` grant for that run alone. Oldest first.
 */
export function liveCapabilityGrants(
  store: Store,
  q: { tenant: string; bindingId: string; sessionId: string; runId: string; now: string },
): CapabilityGrantRow[] {
  const rows = dbOf(store)
    .prepare(
      `SELECT * FROM capability_grants WHERE tenant = ? AND binding_id = ? AND ${LIVE} AND (lifetime = 'binding' ` +
        "OR (lifetime = 'session' AND session_id = ?) OR (lifetime IN ('run', 'once') AND run_id = ?)) " +
        'ORDER BY created_at, id',
    )
    .all(q.tenant, q.bindingId, q.now, q.sessionId, q.runId) as GrantSqlRow[];
  return rows.map(toGrant);
}

/**
 * Use up a `once` grant: true for exactly one caller, and only while it is live (unused, not revoked, not expired),
 * whichever process asks. Audited (`grant.used`, actor `host`) in the same transaction (joining the caller's, which
 * allows the action).
 */
export function useOnceGrant(store: Store, id: string, at: string): boolean {
  return store.transaction(() => {
    const changed = dbOf(store)
      .prepare(`UPDATE capability_grants SET used_at = ? WHERE id = ? AND lifetime = 'once' AND ${LIVE}`)
      .run(at, id, at).changes;
    if (changed !== 1) return false;
    const row = capabilityGrantById(store, id)!;
    store.audit.append(
      {
        type: 'grant.used',
        actor: 'host',
        sessionId: row.sessionId ?? null,
        runId: row.runId ?? null,
        data: { grantId: id, tenant: row.tenant, capability: row.capability, scope: row.scope },
      },
      at,
    );
    return true;
  });
}

/** The outcome of {@link revokeCapabilityGrant}. */
export type RevokeGrantResult =
  | { ok: true; grant: CapabilityGrantRow }
  | { ok: false; code: 'not_found' }
  | { ok: false; code: 'already_revoked'; grant: CapabilityGrantRow };

/**
 * Revoke a grant: the next action that would have used it asks again. Another tenant's grant (when `tenant` is given)
 * is `not_found`, like one that does not exist. Audited (`grant.revoked`, actor `by`); revoking twice changes nothing.
 */
export function revokeCapabilityGrant(
  store: Store,
  id: string,
  by: { by: string; at: string; tenant?: string },
): RevokeGrantResult {
  return store.transaction(() => {
    const grant = capabilityGrantById(store, id, by.tenant);
    if (!grant) return { ok: false, code: 'not_found' } as const;
    if (grant.revokedAt !== undefined) return { ok: false, code: 'already_revoked', grant } as const;
    dbOf(store)
      .prepare('UPDATE capability_grants SET revoked_at = ?, revoked_by = ? WHERE id = ?')
      .run(by.at, by.by, id);
    store.audit.append(
      {
        type: 'grant.revoked',
        actor: by.by,
        sessionId: grant.sessionId ?? null,
        runId: grant.runId ?? null,
        data: { grantId: id, tenant: grant.tenant, bindingId: grant.bindingId },
      },
      by.at,
    );
    return { ok: true, grant: capabilityGrantById(store, id)! } as const;
  });
}

/**
 * A page of grants in creation order: of one tenant and binding when given; only the live ones (at `now`, default the
 * current time) when `live`. `after` is the last id of the previous page; an id this filter does not see is
 * `RangeError` (naming `after`).
 */
export function listCapabilityGrants(
  store: Store,
  q: { tenant?: string; bindingId?: string; live?: boolean; limit: number; after?: string; now?: string },
): CapabilityGrantRow[] {
  const where: string[] = [];
  const args: unknown[] = [];
  const add = (clause: string, arg: unknown) => {
    where.push(clause);
    args.push(arg);
  };
  if (q.tenant !== undefined) add('tenant = ?', q.tenant);
  if (q.bindingId !== undefined) add('binding_id = ?', q.bindingId);
  if (q.live === true) add(LIVE, q.now ?? new Date().toISOString());
  if (q.after !== undefined) {
    const from = capabilityGrantById(store, q.after, q.tenant);
    if (!from) throw new RangeError(`after: no grant ${q.after}`);
    where.push('(created_at, id) > (?, ?)');
    args.push(from.createdAt, from.id);
  }
  const sql =
    `SELECT * FROM capability_grants${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''} ` +
    'ORDER BY created_at, id LIMIT ?';
  return (
    dbOf(store)
      .prepare(sql)
      .all(...args, q.limit) as GrantSqlRow[]
  ).map(toGrant);
}
