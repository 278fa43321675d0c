/**
 * What the audit log needs from storage. The hash chain, signatures and verification are
 * host/audit/'s; the SQL that stores and reads the rows is host/state/auditTable.ts's, which
 * implements this (so audit/ never imports state/, and state/ may use audit/).
 */

/** The type of the record that introduces a signing key into the chain (docs/scale-out.md §4). */
export const KEY_CREATED = 'audit.key_created';

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

/**
 * One stored row as the verifier reads it: `hashed` is the text whose SHA-256 the row's hash is when its data is
 * stored as the canonical JSON the log wrote ({@link STORED_RECORD_LAYOUT}), so the verifier neither parses nor
 * encodes anything for an intact row; null when a field is not stored as text (tampering). Positional: no object per
 * row in the verifier's hot loop.
 */
export type VerifyRow = readonly [seq: number, hashed: string | null, hash: string, prev: string, rowid: number];

/**
 * The text a record's hash covers, as laid out from its stored fields: the tag and a NUL byte, then
 * `{"actor":…,"at":…,"data":<data as stored>,"prev":…,"runId":…,"seq":…,"sessionId":…,"type":…}` (canonical JSON's
 * key order), each text field a JSON string (null as `null`), seq as an integer. This equals the canonical JSON the
 * log hashed because it stores `data` as that very canonical text; test/unit/audit/storedHash.test.ts holds it.
 */
export const STORED_RECORD_LAYOUT = {
  tag: 'paddock-audit-v1',
  keys: ['actor', 'at', 'data', 'prev', 'runId', 'seq', 'sessionId', 'type'],
} as const;

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
  /** Rows in storage order (rowid), a page at a time, as the verifier hashes them (so a moved row shows). */
  pagesToVerify(): IterableIterator<VerifyRow[]>;
  /** One row by its storage position (the verifier's slow path). */
  rowAt(rowid: number): AuditRow | undefined;
  /** How many rows are stored (for progress). */
  count(): number;
  /** Rows after `seq`, in seq order. */
  rowsAfter(seq: number): IterableIterator<AuditRow>;
  /** The highest seq (null when empty). */
  maxSeq(): number | null;
  /** Every signed checkpoint, by seq. */
  checkpoints(): CheckpointRow[];
  /** Every {@link KEY_CREATED} row, by seq: one per key that joined the chain, read through an index of them alone. */
  keyRecords(): AuditRow[];
}
