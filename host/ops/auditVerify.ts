/**
 * Verifying the signed audit chain, for `paddock audit verify` and `GET /v1/audit/verify`: the whole chain is
 * checked with the data folder's public key as the root of trust, or against a pinned set (host/audit/verify.ts); a
 * tenant's admin is shown the first bad record only when it is one it may read.
 */
import { createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { auditKeyPaths } from '../audit/auditKey.js';
import { HostError } from '../errors.js';
import type { AuditStorage } from '../audit/auditStorage.js';
import type { AuditTrust } from '../audit/keyTrust.js';
import { verifyAudit, type AuditProgress, type AuditVerdict } from '../audit/verify.js';
import { auditRowsAfter, auditStorageOf } from '../state/auditReads.js';
import { recordAuditVerification } from '../state/auditVerifications.js';
import type { Store } from '../state/store.js';
import { auditVisibleTo, exportedRecord, type ExportedAuditRecord } from './auditExport.js';
import { tenantOfAuditRow } from './auditTenancy.js';

/**
 * Verify the chain in `storage`: against exactly the public keys in `keyFiles` when given (pinned), else with the
 * data folder's key as the root of trust (keys the chain introduces count once a trusted checkpoint covers them).
 */
export function verifyAuditLog(
  storage: AuditStorage,
  dataDir: string,
  keyFiles: readonly string[] = [],
  onProgress?: AuditProgress,
): AuditVerdict {
  const read = (file: string) => {
    let pem: Buffer;
    try {
      pem = readFileSync(file);
    } catch (error) {
      // A folder that never signed (a new data folder on a shared database) has no key to trust: say so, name the way.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      throw new HostError(
        'NOT_FOUND',
        `no audit public key at ${file}: verify from a data folder whose host signed this chain, or name the keys ` +
          'to trust with --key <pub.pem>',
      );
    }
    return createPublicKey(pem);
  };
  const trust: AuditTrust =
    keyFiles.length > 0 ? { pinned: keyFiles.map(read) } : { root: read(auditKeyPaths(dataDir).publicPath) };
  return verifyAudit(storage, trust, onProgress);
}

/** The verdict as a tenant's admin sees it: the first bad record itself only when that tenant may read it. */
export type TenantAuditVerdict = AuditVerdict & { record?: ExportedAuditRecord | null };

/**
 * Verify the store's whole chain and record the outcome (`by`: who asked; the overview shows the last one). On
 * failure, add the bad record when `tenant` may read it (else null); `hostRecords`: whether the caller reads the
 * host's own records (the operator tenant's admin; default: the operator tenant).
 */
export function verifyAuditFor(
  store: Store,
  tenant: string,
  who: { by: string; hostRecords?: boolean },
): TenantAuditVerdict {
  const verdict = verifyAuditLog(auditStorageOf(store), store.dataDir);
  recordAuditVerification(store, verdict, { via: 'api', by: who.by });
  if (verdict.ok) return verdict;
  const row = auditRowsAfter(store, verdict.seq - 1, 1)[0];
  if (!row || row.seq !== verdict.seq) return { ...verdict, record: null };
  let data: unknown;
  try {
    data = JSON.parse(row.data);
  } catch {
    return { ...verdict, record: null }; // malformed data: nothing to attribute it by
  }
  const owner = tenantOfAuditRow(store, row, data);
  return {
    ...verdict,
    record: auditVisibleTo(tenant, owner, who.hostRecords) ? exportedRecord(row, data, owner) : null,
  };
}
