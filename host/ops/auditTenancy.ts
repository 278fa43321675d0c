/**
 * Which tenant an audit record belongs to, for the admin API's export (docs/http-api.md, "Admin endpoints"). A record
 * is a tenant's when it names one of the tenant's sessions or runs, is about one of its configuration objects, or is
 * one of a few host records whose data names the tenant (tokens, webhooks, refused dispatches, approvals, grants).
 * Everything else is the host's own (null): only the operator tenant's admin sees it — a record type added later is
 * the host's until it is placed here, so a new record never leaks to a tenant by default.
 */
import type { Store } from '../state/store.js';
import { configTenantBefore, type AuditRowWithTenant } from '../state/auditReads.js';
import { DEFAULT_TENANT } from '../config/tenant.js';

/** Host records whose `data.tenant` is the tenant they are about (each is written with the acting tenant). */
const TENANT_NAMED_TYPES = new Set([
  'token.created',
  'token.revoked',
  'webhook.registered',
  'webhook.removed',
  'dispatch.refused',
  'gateway.circuit',
  // Approvals and capability grants (host/state/approvals.ts, capabilityGrants.ts): a binding grant names no run.
  'approval.requested',
  'approval.approved',
  'approval.denied',
  'approval.expired',
  'approval.voided',
  'grant.created',
  'grant.used',
  'grant.revoked',
]);

/** The tenant `row` belongs to, or null for the host's own records. `data` is the row's parsed data. */
export function tenantOfAuditRow(store: Store, row: AuditRowWithTenant, data: unknown): string | null {
  if (row.sessionTenant !== null) return row.sessionTenant;
  // Names a session or run the store no longer knows (never in practice): the operator's, never a guess.
  if (row.session_id !== null || row.run_id !== null) return null;
  const d = (data ?? {}) as Record<string, unknown>;
  if (row.type.startsWith('config.') && typeof d.kind === 'string' && typeof d.id === 'string') {
    if (d.spec && typeof d.spec === 'object') {
      const tenant = (d.spec as { tenant?: unknown }).tenant;
      // A spec stored before tenants existed has none: it was the default tenant's (migration 0006).
      return typeof tenant === 'string' ? tenant : DEFAULT_TENANT;
    }
    // A deletion: the object's tenant was its last spec's.
    if (typeof d.version !== 'number') return null;
    return configTenantBefore(store, d.kind, d.id, { deletedAt: row.at, version: d.version }) ?? null;
  }
  if (row.type === 'skill.recorded' && typeof d.skill === 'string')
    return configTenantBefore(store, 'skill', d.skill, { at: row.at }) ?? null;
  if (TENANT_NAMED_TYPES.has(row.type) && typeof d.tenant === 'string') return d.tenant;
  return null;
}
