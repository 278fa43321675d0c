import { hash, type KeyObject } from 'node:crypto';
import { KEY_CREATED, type AuditRow, type AuditStorage, type CheckpointRow, type VerifyRow } from './auditStorage.js';
import { GENESIS, hashRecord } from './auditLog.js';
import { KeyTrust, type AuditTrust, type KeyReport } from './keyTrust.js';

/** Why verification failed. */
export type AuditProblem = 'edited' | 'dropped' | 'reordered' | 'truncated' | 'bad signature' | 'malformed';

/** The verifier's verdict. */
export type AuditVerdict =
  | {
      ok: true;
      records: number;
      checkpoints: number;
      head: string;
      /** The root key's id (or the first pinned one's). */
      keyId: string;
      /** Every key the walk knew of: the root or pinned ones, and those the chain introduced (keyTrust.ts). */
      keys: KeyReport[];
      /** The highest record a checkpoint of a trusted key covers (0: none); later records hold by their hashes only. */
      signedUpTo: number;
    }
  | { ok: false; problem: AuditProblem; seq: number; detail: string; records: number };

/** Told how far a verification got: records checked so far of `total` (read when it started). */
export type AuditProgress = (checked: number, total: number) => void;

type Failure = Extract<AuditVerdict, { ok: false }>;

/**
 * Recompute the whole chain in storage order and check every checkpoint against it and against the trusted keys
 * (`trust`: a bare key is the root of trust, keyTrust.ts). Reports the first problem: an edited record (its hash does
 * not match its content), a dropped or reordered one (seq gap, or `prev` not the previous record's hash), a truncated
 * log (a checkpoint covers records that are gone), a bad checkpoint signature or one by a key not trusted, or data
 * that is not JSON.
 *
 * Rows are hashed from their stored bytes (the text the storage lays out, auditStorage.ts `STORED_RECORD_LAYOUT`);
 * only a row that does not match that way is read whole, parsed and hashed again the slow way (data stored in another
 * JSON form) before it is called edited. Each checkpoint's signature is checked once, when the walk reaches its
 * record; a key the chain introduces (`audit.key_created`) is learnt when the walk has checked its record. `onProgress`
 * is told after each page.
 */
export function verifyAudit(db: AuditStorage, trust: KeyObject | AuditTrust, onProgress?: AuditProgress): AuditVerdict {
  const keys = new KeyTrust('pinned' in trust || 'root' in trust ? trust : { root: trust });
  const checkpoints = db.checkpoints();
  // Rows past the last signed checkpoint are the only ones no signature vouches for: their data is parsed too, so
  // a row there that is not JSON is `malformed` (a signed row's bytes are the ones the host wrote, canonical JSON).
  const lastCheckpoint = checkpoints.at(-1)?.seq ?? 0;
  const bySeq = new Map(checkpoints.map((cp) => [cp.seq, cp]));
  const total = onProgress ? db.count() : 0;
  let expectedSeq = 1;
  let prev = GENESIS;
  let records = 0;
  for (const page of db.pagesToVerify()) {
    for (const row of page) {
      records += 1;
      const failure = checkRow(db, row, expectedSeq, prev, lastCheckpoint, records);
      if (failure) return failure;
      if (mayIntroduceKey(row)) {
        const whole = db.rowAt(row[4])!; // rare: a key's record (or a row stored without the fast path's text)
        if (whole.type === KEY_CREATED) keys.introduce(row[0], publicKeyIn(whole.data));
      }
      const checkpoint = bySeq.get(row[0]);
      if (checkpoint) {
        const bad = checkCheckpoint(checkpoint, row[2], keys, records);
        if (bad) return bad;
        bySeq.delete(row[0]);
      }
      prev = row[2];
      expectedSeq += 1;
    }
    onProgress?.(records, Math.max(total, records));
  }
  // A checkpoint left over covers a record the walk never reached.
  for (const cp of bySeq.values()) {
    const bad = checkCheckpoint(cp, undefined, keys, records);
    if (bad) return bad;
  }
  // Checkpoints and not one by a trusted key: the whole chain may have been re-signed (or the root key replaced). A
  // tail after the last trusted checkpoint is a new host's moment before a trusted one vouches for it; a chain with
  // no trusted checkpoint at all is nothing any trusted key signed.
  const first = checkpoints[0];
  if (first && keys.signedUpTo === 0)
    return {
      ok: false,
      problem: 'bad signature',
      seq: first.seq,
      detail:
        `no checkpoint is signed by a trusted key (${keys.trustedIds()}); ` +
        `the first, at ${first.seq}, by ${first.key_id}`,
      records,
    };
  const reports = keys.reports();
  return {
    ok: true,
    records,
    checkpoints: checkpoints.length,
    head: prev,
    keyId: reports[0]!.keyId,
    keys: reports,
    signedUpTo: keys.signedUpTo,
  };
}

/** How the hashed text of a key's record ends (`type` is the layout's last key): no second pass over the log. */
const KEY_CREATED_TAIL = `"type":${JSON.stringify(KEY_CREATED)}}`;

/** Whether a walked row may be a key's record: its hashed text says so, or there is none (PostgreSQL, tampering). */
const mayIntroduceKey = (row: VerifyRow) => row[1] === null || row[1].endsWith(KEY_CREATED_TAIL);

/** The `publicKey` of an `audit.key_created` record's data as stored (the walk has checked the row's hash). */
function publicKeyIn(data: string): unknown {
  try {
    return (JSON.parse(data) as { publicKey?: unknown }).publicKey;
  } catch {
    return undefined;
  }
}

/** One row against the chain so far: its position, its hash and its link to the previous record. */
function checkRow(
  db: AuditStorage,
  row: VerifyRow,
  expectedSeq: number,
  prev: string,
  signedUpTo: number,
  records: number,
): Failure | undefined {
  const [seq, hashed, rowHash, rowPrev, rowid] = row;
  if (seq !== expectedSeq) {
    // A gap means records were removed; going backwards means rows were moved.
    const problem = seq > expectedSeq ? 'dropped' : 'reordered';
    return { ok: false, problem, seq: expectedSeq, detail: `expected record ${expectedSeq}, found ${seq}`, records };
  }
  if (hashed === null || hash('sha256', hashed) !== rowHash || seq > signedUpTo) {
    const whole = db.rowAt(rowid)!; // the row just read, within the verifier's read
    let parsed: unknown;
    try {
      parsed = JSON.parse(whole.data);
    } catch {
      return { ok: false, problem: 'malformed', seq, detail: 'data is not JSON', records };
    }
    if (hashAs(whole, parsed, seq) !== rowHash) return classifyMismatch(db, whole, parsed, records);
  }
  if (rowPrev !== prev)
    return {
      ok: false,
      problem: 'dropped',
      seq,
      detail: "prev does not match the previous record's hash (a record before it was removed or replaced)",
      records,
    };
  return undefined;
}

/** A checkpoint against the chain's hash at its record (undefined: the log ends before it) and the trusted keys. */
function checkCheckpoint(
  cp: CheckpointRow,
  head: string | undefined,
  keys: KeyTrust,
  records: number,
): Failure | undefined {
  const judged = keys.judge(cp);
  if ('bad' in judged) return { ok: false, problem: 'bad signature', seq: cp.seq, detail: judged.bad, records };
  if (head === undefined)
    return {
      ok: false,
      problem: 'truncated',
      seq: cp.seq,
      detail: `a signed checkpoint covers record ${cp.seq}, but the log ends at ${records}`,
      records,
    };
  if (head !== cp.head)
    return {
      ok: false,
      problem: 'edited',
      seq: cp.seq,
      detail: `record ${cp.seq} differs from the signed checkpoint`,
      records,
    };
  return undefined;
}

/** The hash of a row's parsed content as if it were record `seq` (the slow path: any JSON form of its data). */
function hashAs(row: AuditRow, data: unknown, seq: number): string {
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
function classifyMismatch(db: AuditStorage, row: AuditRow, data: unknown, records: number): Failure {
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
  for (const other of db.rowsAfter(row.seq)) {
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
