/**
 * The audit records a tenant's admin may read (`GET /v1/audit/export`, docs/http-api.md "Admin endpoints"), oldest
 * first, a page at a time by seq: the tenant's records (host/ops/auditTenancy.ts) and, for the operator tenant, the
 * host's own too. Each record is exactly as stored and hashed, so a client recomputes its hash and checks the links
 * between consecutive seqs (docs/http-api.md says what a filtered export can and cannot prove).
 */
import type { AuditRecord } from '../audit/auditLog.js';
import { DEFAULT_TENANT } from '../config/tenant.js';
import { auditRowsAfter, type AuditRowWithTenant } from '../state/auditReads.js';
import type { Store } from '../state/store.js';
import { tenantOfAuditRow } from './auditTenancy.js';

/** An exported record: the stored record (every hashed field, `prev` and `hash`) and the tenant it is counted to. */
export interface ExportedAuditRecord extends AuditRecord {
  /** The tenant it belongs to; null for the host's own records (operator tenant only). Not hashed. */
  tenant: string | null;
}

/** A page of a tenant's export. */
export interface AuditExportPage {
  records: ExportedAuditRecord[];
  /** The seq to pass as `after` for the next page (the last record this page looked at). */
  next: number;
  /** False when the log ended within this page (a later call may still find records appended since). */
  more: boolean;
}

/** Rows read from the store per batch while filling a page. */
const BATCH = 500;

/**
 * May a reader of `tenant` read a record counted to `owner`? The host's own records (owner null) only when
 * `hostRecords` (default: the operator tenant, whose admin reads them; its viewers do not).
 */
export function auditVisibleTo(
  tenant: string,
  owner: string | null,
  hostRecords: boolean = tenant === DEFAULT_TENANT,
): boolean {
  return owner === tenant || (owner === null && hostRecords);
}

/** A stored row as an exported record (its tenant given). */
export function exportedRecord(row: AuditRowWithTenant, data: unknown, tenant: string | null): ExportedAuditRecord {
  return {
    seq: row.seq,
    at: row.at,
    type: row.type,
    actor: row.actor,
    sessionId: row.session_id,
    runId: row.run_id,
    data,
    prev: row.prev,
    hash: row.hash,
    tenant,
  };
}

/**
 * Up to `limit` of the records `tenant`'s admin may read with seq > `after`, looking at no more than `scan` records
 * (so a tenant with few records in a long log gets short pages quickly, each with the cursor to go on from).
 */
export function exportAudit(
  store: Store,
  tenant: string,
  page: { after: number; limit: number; scan: number; hostRecords?: boolean },
): AuditExportPage {
  const records: ExportedAuditRecord[] = [];
  let cursor = page.after;
  let scanned = 0;
  while (records.length < page.limit && scanned < page.scan) {
    const rows = auditRowsAfter(store, cursor, Math.min(BATCH, page.scan - scanned));
    if (rows.length === 0) return { records, next: cursor, more: false };
    for (const row of rows) {
      cursor = row.seq;
      scanned += 1;
      const data = JSON.parse(row.data) as unknown;
      const owner = tenantOfAuditRow(store, row, data);
      if (auditVisibleTo(tenant, owner, page.hostRecords)) records.push(exportedRecord(row, data, owner));
      if (records.length === page.limit) break;
    }
  }
  return { records, next: cursor, more: true };
}
