import { verify as verifySignature, type KeyObject } from 'node:crypto';
import type { AuditRow, AuditStorage } from './auditStorage.js';
import { keyIdOf } from './auditKey.js';
import { checkpointBody, GENESIS, hashRecord } from './auditLog.js';

/** Why verification failed. */
export type AuditProblem = 'edited' | 'dropped' | 'reordered' | 'truncated' | 'bad signature' | 'malformed';

/** The verifier's verdict. */
export type AuditVerdict =
  | { ok: true; records: number; checkpoints: number; head: string; keyId: string }
  | { ok: false; problem: AuditProblem; seq: number; detail: string; records: number };

type Row = AuditRow;

/**
 * Recompute the whole chain in seq order and check every checkpoint against it and against
 * `publicKey`. Reports the first problem: an edited record (its hash does not match its
 * content), a dropped or reordered one (seq gap, or `prev` not the previous record's hash),
 * a truncated log (a checkpoint covers records that are gone) or a bad checkpoint signature.
 */
export function verifyAudit(db: AuditStorage, publicKey: KeyObject): AuditVerdict {
  const rows = db.rowsAsStored();
  const heads = new Map<number, string>();
  let expectedSeq = 1;
  let prev = GENESIS;
  let records = 0;
  let mismatch: { row: Row; data: unknown } | undefined;
  for (const row of rows) {
    records += 1;
    let data: unknown;
    try {
      data = JSON.parse(row.data);
    } catch {
      return { ok: false, problem: 'malformed', seq: row.seq, detail: 'data is not JSON', records };
    }
    if (row.seq !== expectedSeq) {
      // A gap means records were removed; going backwards means rows were moved.
      const problem = row.seq > expectedSeq ? 'dropped' : 'reordered';
      return {
        ok: false,
        problem,
        seq: expectedSeq,
        detail: `expected record ${expectedSeq}, found ${row.seq}`,
        records,
      };
    }
    if (hashAs(row, data, row.seq) !== row.hash) {
      mismatch = { row, data }; // classified after the loop: better-sqlite3 allows no query while iterating
      break;
    }
    if (row.prev !== prev) {
      return {
        ok: false,
        problem: 'dropped',
        seq: row.seq,
        detail: "prev does not match the previous record's hash (a record before it was removed or replaced)",
        records,
      };
    }
    heads.set(row.seq, row.hash);
    prev = row.hash;
    expectedSeq += 1;
  }
  if (mismatch) return classifyMismatch(db, mismatch.row, mismatch.data, records);
  const keyId = keyIdOf(publicKey);
  const checkpoints = db.checkpoints();
  for (const cp of checkpoints) {
    const signed = verifySignature(
      null,
      Buffer.from(checkpointBody(cp.seq, cp.head)),
      publicKey,
      Buffer.from(cp.signature, 'base64'),
    );
    if (!signed) {
      return {
        ok: false,
        problem: 'bad signature',
        seq: cp.seq,
        detail: `checkpoint at ${cp.seq} is not signed by key ${keyId} (signed by ${cp.key_id})`,
        records,
      };
    }
    const head = heads.get(cp.seq);
    if (head === undefined) {
      return {
        ok: false,
        problem: 'truncated',
        seq: cp.seq,
        detail: `a signed checkpoint covers record ${cp.seq}, but the log ends at ${records}`,
        records,
      };
    }
    if (head !== cp.head)
      return {
        ok: false,
        problem: 'edited',
        seq: cp.seq,
        detail: `record ${cp.seq} differs from the signed checkpoint`,
        records,
      };
  }
  return { ok: true, records, checkpoints: checkpoints.length, head: prev, keyId };
}

function hashAs(row: Row, data: unknown, seq: number): string {
  return hashRecord({
    seq,
    at: row.at,
    type: row.type,
    actor: row.actor,
    sessionId: row.session_id,
    runId: row.run_id,
    data,
    prev: row.prev,
  });
}

/**
 * A record whose hash does not match its content: find out whether it is intact but sits at the
 * wrong position (it was hashed with another seq), and whether that looks like a swap or a
 * removal before it. Runs only on the failure path.
 */
function classifyMismatch(db: AuditStorage, row: Row, data: unknown, records: number): AuditVerdict {
  const total = db.maxSeq() ?? row.seq;
  let belongsAt: number | undefined;
  for (let seq = Math.max(1, row.seq - 1000); seq <= Math.min(total + 1000, row.seq + 1000); seq++) {
    if (seq !== row.seq && hashAs(row, data, seq) === row.hash) {
      belongsAt = seq;
      break;
    }
  }
  if (belongsAt === undefined)
    return { ok: false, problem: 'edited', seq: row.seq, detail: 'content does not match its hash', records };
  const detail = `record stored at ${row.seq} was written as record ${belongsAt}`;
  if (belongsAt < row.seq) return { ok: false, problem: 'reordered', seq: row.seq, detail, records };
  // Written later than where it sits: either swapped with a later record, or records before it were removed and
  // renumbered.
  const later = db.rowsAfter(row.seq);
  for (const other of later) {
    const otherData = JSON.parse(other.data) as unknown;
    if (hashAs(other, otherData, row.seq) === other.hash)
      return { ok: false, problem: 'reordered', seq: row.seq, detail, records };
  }
  return {
    ok: false,
    problem: 'dropped',
    seq: row.seq,
    detail: `${detail}: ${belongsAt - row.seq} record(s) before it were removed`,
    records,
  };
}
