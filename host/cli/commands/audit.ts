import { auditTable } from '../../state/auditTable.js';
import { recordAuditVerificationIn } from '../../state/auditVerifications.js';
import { describeState, openStateReadOnly, type StateLocation } from '../../state/stateLocation.js';
import { readAuditRecords } from '../../audit/auditLog.js';
import { verifyAuditLog } from '../../ops/auditVerify.js';
import type { AuditVerdict } from '../../audit/verify.js';
import { HostError } from '../../errors.js';
import { progressLine } from '../../util/progress.js';

type Out = (text: string) => void;

/**
 * `paddock audit verify|export` on the SQLite file or the PostgreSQL database (`where`): read-only (on PostgreSQL every
 * transaction is), no migration, no recovery. Returns the exit code.
 */
export function auditCommand(
  where: StateLocation,
  verb: string | undefined,
  flags: { json: boolean; keys: string[] },
  out: Out,
): number {
  const { dataDir } = where;
  const db = openStateReadOnly(where);
  if (!db) throw new HostError('NOT_FOUND', `no state database at ${describeState(where)}`);
  try {
    if (verb === 'verify') {
      const progress = progressLine('paddock audit verify', 'records');
      const verdict = verifyAuditLog(auditTable(db), dataDir, flags.keys, (checked, total) =>
        progress.update(checked, total),
      );
      progress.finish();
      // The chain was read without a write lock; the outcome is one short write of its own (GET /v1/overview shows
      // the last one). A database older than migration 13 is not migrated by a verify: nothing is recorded then.
      // Recording is a convenience: a data folder this user may read but not write still gets its verdict.
      try {
        recordAuditVerificationIn(where, verdict, { via: 'cli', by: `user:${process.env.USER ?? 'operator'}` });
      } catch {
        // not recorded; the verdict below is what the command answers
      }
      if (flags.json) out(JSON.stringify(verdict));
      else if (verdict.ok) out(verdictText(verdict));
      else out(`FAILED at record ${verdict.seq}: ${verdict.problem} — ${verdict.detail}`);
      return verdict.ok ? 0 : 1;
    }
    if (verb === 'export') {
      for (const record of readAuditRecords(auditTable(db))) out(JSON.stringify(record));
      return 0;
    }
    throw new HostError('INVALID_INPUT', 'audit needs verify or export');
  } finally {
    db.close();
  }
}

/** An intact chain's verdict for people: the counts, each key and whether it counts, the unvouched tail if any. */
function verdictText(verdict: Extract<AuditVerdict, { ok: true }>): string {
  const keys = verdict.keys.map(
    (k) =>
      `${k.keyId} (${k.checkpoints} checkpoint${k.checkpoints === 1 ? '' : 's'}` +
      `${k.introducedAt === null ? '' : `, introduced at record ${k.introducedAt}`}` +
      `${k.trusted ? '' : ', NOT trusted: no checkpoint of a trusted key covers its introduction'})`,
  );
  const lines = [
    `OK: ${verdict.records} records, ${verdict.checkpoints} signed checkpoints, ` +
      `key${keys.length === 1 ? '' : 's'} ${keys.join(', ')}, head ${verdict.head.slice(0, 16)}…`,
  ];
  if (verdict.signedUpTo < verdict.records)
    lines.push(
      `records ${verdict.signedUpTo + 1}–${verdict.records} are after the last checkpoint of a trusted key: ` +
        'they hold by their hashes only',
    );
  return lines.join('\n');
}
