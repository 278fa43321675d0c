/**
 * What the audit log needs from storage. The hash chain, signatures and verification are
 * host/audit/'s; the SQL that stores and reads the rows is host/state/auditTable.ts's, which
 * implements this (so audit/ never imports state/, and state/ may use audit/).
 */

/** An `audit` row as stored. */
export interface AuditRow {
  seq: number;
  at: string;
  type: string;
  actor: string;
  session_id: string | null;
  run_id: string | null;
  data: string;
  prev: string;
  hash: string;
}

/** A stored signed checkpoint. */
export interface CheckpointRow {
  seq: number;
  head: string;
  key_id: string;
  signature: string;
}

/** A hashed record to store (`data` as canonical JSON text). */
export interface AuditInsert {
  seq: number;
  at: string;
  type: string;
  actor: string;
  sessionId: string | null;
  runId: string | null;
  data: string;
  prev: string;
  hash: string;
}

/** The audit table's reads and writes, as the audit log and its verifier use them. */
export interface AuditStorage {
  /** Store one hashed record. */
  insert(record: AuditInsert): void;
  /** The newest record's seq and hash. */
  head(): { seq: number; hash: string } | undefined;
  /** Store a signed checkpoint (once per seq). */
  insertCheckpoint(seq: number, at: string, headHash: string, keyId: string, signature: string): void;
  /** Rows in seq order, optionally only those of one run or of some types. */
  rows(filter?: { runId?: string; types?: string[] }): IterableIterator<AuditRow>;
  /** Rows in storage order (rowid): what the verifier walks, so a moved row shows. */
  rowsAsStored(): IterableIterator<AuditRow>;
  /** Rows after `seq`, in seq order. */
  rowsAfter(seq: number): IterableIterator<AuditRow>;
  /** The highest seq (null when empty). */
  maxSeq(): number | null;
  /** Every signed checkpoint, by seq. */
  checkpoints(): CheckpointRow[];
}
