/**
 * The outcomes of verifications of the whole audit chain (`paddock audit verify`, `GET /v1/audit/verify`), kept so
 * the overview (`GET /v1/overview`) shows the last one without walking the chain (migration 13). A convenience
 * record, not evidence: verifying again is the check.
 */
import type { AuditVerdict } from '../audit/verify.js';
import { dialectOf, type Db } from './db.js';
import { openStateForWrite, type StateLocation } from './stateLocation.js';
import { dbOf, type Store } from './store.js';

/** Who ran a verification: the operator's CLI or a token through the API. */
export type VerifiedVia = 'cli' | 'api';

/** A recorded verification, as the overview shows it (no `by`: a token id of another tenant is none of a reader's). */
export interface AuditVerification {
  at: string;
  ok: boolean;
  /** Records checked (on failure: up to the first bad one). */
  records: number;
  /** The first bad record's seq and what is wrong with it; null when ok. */
  firstBad: { seq: number; problem: string } | null;
  via: VerifiedVia;
}

interface VerificationRow {
  at: string;
  ok: 0 | 1;
  records: number;
  bad_seq: number | null;
  problem: string | null;
  via: VerifiedVia;
}

/** Record `verdict` in the store (`GET /v1/audit/verify`). */
export function recordAuditVerification(
  store: Store,
  verdict: AuditVerdict,
  who: { via: VerifiedVia; by: string },
  now = new Date(),
): void {
  recordOn(dbOf(store), verdict, who, now);
}

/**
 * Record `verdict` in the state at `where` (`paddock audit verify` reads the chain read-only, then opens the state
 * for this one write). False when the database predates the table (a verify never migrates): nothing is recorded.
 */
export function recordAuditVerificationIn(
  where: StateLocation,
  verdict: AuditVerdict,
  who: { via: VerifiedVia; by: string },
  now = new Date(),
): boolean {
  const db = openStateForWrite(where);
  try {
    return recordOn(db, verdict, who, now);
  } finally {
    db.close();
  }
}

function recordOn(db: Db, verdict: AuditVerdict, who: { via: VerifiedVia; by: string }, now = new Date()): boolean {
  const table = db
    .prepare(
      dialectOf(db) === 'postgres'
        ? "SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'audit_verifications'"
        : "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'audit_verifications'",
    )
    .get();
  if (!table) return false;
  db.prepare(
    'INSERT INTO audit_verifications (at, ok, records, bad_seq, problem, via, by) VALUES (?, ?, ?, ?, ?, ?, ?)',
  ).run(
    now.toISOString(),
    verdict.ok ? 1 : 0,
    verdict.records,
    verdict.ok ? null : verdict.seq,
    verdict.ok ? null : verdict.problem,
    who.via,
    who.by,
  );
  return true;
}

/** The latest recorded verification (by its row id: the primary key's last entry), or null when none ever ran. */
export function latestAuditVerification(store: Store): AuditVerification | null {
  const row = dbOf(store)
    .prepare('SELECT at, ok, records, bad_seq, problem, via FROM audit_verifications ORDER BY id DESC LIMIT 1')
    .get() as VerificationRow | undefined;
  if (!row) return null;
  return {
    at: row.at,
    ok: row.ok === 1,
    records: row.records,
    firstBad: row.bad_seq === null ? null : { seq: row.bad_seq, problem: row.problem ?? 'unknown' },
    via: row.via,
  };
}
