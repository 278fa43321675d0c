/**
 * The `audit` and `audit_checkpoints` tables. The hash chain and its signatures are host/audit/'s;
 * the statements that store and read them are here, with the rest of the SQL (docs/state.md).
 */
import type { Db } from './db.js';

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

/** The writer's prepared statements (the appending side of the audit log). */
export function auditWriter(db: Db) {
  const insert = db.prepare(
    'INSERT INTO audit (seq, at, type, actor, session_id, run_id, data, prev, hash) VALUES (@seq, @at, @type, @actor, @sessionId, @runId, @data, @prev, @hash)',
  );
  const head = db.prepare('SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1');
  const insertCheckpoint = db.prepare('INSERT OR IGNORE INTO audit_checkpoints (seq, at, head, key_id, signature) VALUES (?, ?, ?, ?, ?)');
  return {
    /** Store one hashed record (`data` as canonical JSON text). */
    insert: (record: { seq: number; at: string; type: string; actor: string; sessionId: string | null; runId: string | null; data: string; prev: string; hash: string }) => void insert.run(record),
    /** The newest record's seq and hash. */
    head: () => head.get() as { seq: number; hash: string } | undefined,
    /** Store a signed checkpoint (once per seq). */
    insertCheckpoint: (seq: number, at: string, headHash: string, keyId: string, signature: string) => void insertCheckpoint.run(seq, at, headHash, keyId, signature),
  };
}

/** Rows in seq order, optionally only those of one run or of some types. */
export function auditRows(db: Db, filter: { runId?: string; types?: string[] } = {}): IterableIterator<AuditRow> {
  const clauses: string[] = [];
  const args: unknown[] = [];
  if (filter.runId !== undefined) {
    clauses.push('run_id = ?');
    args.push(filter.runId);
  }
  if (filter.types?.length) {
    clauses.push(`type IN (${filter.types.map(() => '?').join(',')})`);
    args.push(...filter.types);
  }
  const sql = `SELECT * FROM audit ${clauses.length ? `WHERE ${clauses.join(' AND ')}` : ''} ORDER BY seq`;
  return db.prepare(sql).iterate(...args) as IterableIterator<AuditRow>;
}

/** Rows in storage order (rowid): what the verifier walks, so a moved row shows. */
export function auditRowsAsStored(db: Db): IterableIterator<AuditRow> {
  return db.prepare('SELECT * FROM audit ORDER BY rowid').iterate() as IterableIterator<AuditRow>;
}

/** Rows after `seq`, in seq order. */
export function auditRowsAfter(db: Db, seq: number): IterableIterator<AuditRow> {
  return db.prepare('SELECT * FROM audit WHERE seq > ? ORDER BY seq').iterate(seq) as IterableIterator<AuditRow>;
}

/** The highest seq (null when empty). */
export function maxAuditSeq(db: Db): number | null {
  return db.prepare('SELECT max(seq) FROM audit').pluck().get() as number | null;
}

/** Every signed checkpoint, by seq. */
export function auditCheckpoints(db: Db): CheckpointRow[] {
  return db.prepare('SELECT seq, head, key_id, signature FROM audit_checkpoints ORDER BY seq').all() as CheckpointRow[];
}
