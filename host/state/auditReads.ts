/**
 * Reads of the audit log for the admin API (`GET /v1/audit/verify|export`): the store's audit storage, pages of
 * records each with the tenant its session or run records, and the tenant a configuration object had. The
 * attribution rule itself is host/ops/auditTenancy.ts's.
 */
import type { AuditRow, AuditStorage } from '../audit/auditStorage.js';
import { auditTable } from './auditTable.js';
import { perStore } from './perStore.js';
import { dbOf, type Store } from './store.js';

/** The audit log's storage on the store's connection (what the verifier walks). */
export function auditStorageOf(store: Store): AuditStorage {
  return auditTable(dbOf(store));
}

/** An audit row with the tenant of its session (or of its run's session), null when it names neither. */
export interface AuditRowWithTenant extends AuditRow {
  sessionTenant: string | null;
}

const ROWS_WITH_TENANT =
  'SELECT a.*, COALESCE(s.tenant, rs.tenant) AS sessionTenant FROM audit a ' +
  'LEFT JOIN sessions s ON s.id = a.session_id LEFT JOIN runs r ON r.id = a.run_id ' +
  'LEFT JOIN sessions rs ON rs.id = r.session_id';

/** Up to `limit` audit rows after `after`, in seq order, each with the tenant of the session or run it names. */
export function auditRowsAfter(store: Store, after: number, limit: number): AuditRowWithTenant[] {
  return dbOf(store)
    .prepare(`${ROWS_WITH_TENANT} WHERE a.seq > ? ORDER BY a.seq LIMIT ?`)
    .all(after, limit) as AuditRowWithTenant[];
}

/** Up to `limit` audit rows before `before`, newest first, each with the tenant of the session or run it names. */
export function auditRowsBefore(store: Store, before: number, limit: number): AuditRowWithTenant[] {
  return dbOf(store)
    .prepare(`${ROWS_WITH_TENANT} WHERE a.seq < ? ORDER BY a.seq DESC LIMIT ?`)
    .all(before, limit) as AuditRowWithTenant[];
}

/**
 * The reads of {@link configTenantBefore}, once per exported record: index lookups (migration 0009), prepared once per
 * store. The deletion's own change row by config_changes_deletions (whose WHERE is the literal `action = 'deleted'`:
 * SQLite uses a partial index only for a query naming its terms), the spec before it by config_changes_by_object.
 */
function statements(store: Store) {
  const db = dbOf(store);
  const last = (bound: string) =>
    db
      .prepare(
        `SELECT spec FROM config_changes WHERE kind = ? AND id = ? AND ${bound} AND spec IS NOT NULL ` +
          'ORDER BY seq DESC LIMIT 1',
      )
      .pluck();
  return {
    beforeDeletion: last(
      "seq < (SELECT seq FROM config_changes WHERE kind = ? AND id = ? AND action = 'deleted' AND version = ? " +
        'AND at = ? ORDER BY seq LIMIT 1)',
    ),
    atOrBefore: last('at <= ?'),
  };
}
const tenantStatements = perStore(statements);

/**
 * The tenant a configuration object's stored spec named at its newest change that had a spec (a deletion has none):
 * the last before the deletion recorded at `before.deletedAt` with that version, or at or before time `before.at`;
 * undefined when none is recorded.
 */
export function configTenantBefore(
  store: Store,
  kind: string,
  id: string,
  before: { deletedAt: string; version: number } | { at: string },
): string | undefined {
  // A deletion: the last spec recorded before that deletion's own change row (an id re-created later, by any tenant,
  // starts its versions again, so neither the version nor a time alone can tell the two lives apart).
  const s = tenantStatements(store);
  const spec = (
    'deletedAt' in before
      ? s.beforeDeletion.get(kind, id, kind, id, before.version, before.deletedAt)
      : s.atOrBefore.get(kind, id, before.at)
  ) as string | undefined;
  if (spec === undefined) return undefined;
  const tenant = (JSON.parse(spec) as { tenant?: unknown }).tenant;
  return typeof tenant === 'string' ? tenant : undefined;
}
