/**
 * The `audit` and `audit_checkpoints` tables. The hash chain and its signatures are host/audit/'s;
 * the statements that store and read them are here, with the rest of the SQL (docs/state.md).
 */
import {
  KEY_CREATED,
  STORED_RECORD_LAYOUT,
  type AuditInsert,
  type AuditRow,
  type AuditStorage,
  type CheckpointRow,
  type VerifyRow,
} from '../audit/auditStorage.js';
import { dialectOf, type Db, type DbStatement as Statement } from './db.js';

/**
 * The writer's statements (the appending side of the audit log), prepared on first use so a
 * read-only connection (`paddock audit verify`) can read through the same storage.
 */
function auditWriter(db: Db) {
  let statements: { insert: Statement; head: Statement; insertCheckpoint: Statement } | undefined;
  const prepared = () =>
    (statements ??= {
      insert: db.prepare(
        'INSERT INTO audit (seq, at, type, actor, session_id, run_id, data, prev, hash) VALUES (@seq, @at, ' +
          '@type, @actor, @sessionId, @runId, @data, @prev, @hash)',
      ),
      head: db.prepare('SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1'),
      insertCheckpoint: db.prepare(
        'INSERT OR IGNORE INTO audit_checkpoints (seq, at, head, key_id, signature) VALUES (?, ?, ?, ?, ?)',
      ),
    });
  return {
    insert: (record: AuditInsert) => void prepared().insert.run(record),
    head: () => prepared().head.get() as { seq: number; hash: string } | undefined,
    insertCheckpoint: (seq: number, at: string, headHash: string, keyId: string, signature: string) =>
      void prepared().insertCheckpoint.run(seq, at, headHash, keyId, signature),
  };
}

/** Rows in seq order, optionally only those of one run or of some types. */
function auditRows(db: Db, filter: { runId?: string; types?: string[] } = {}): IterableIterator<AuditRow> {
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

/** Rows read per page by {@link auditPagesToVerify}: enough to amortise the call, few enough to stay cached. */
const VERIFY_PAGE = 4096;

/**
 * Each field of {@link STORED_RECORD_LAYOUT} as SQL: text as a JSON string, `data` as stored, seq as its digits. A
 * value of another storage class (a BLOB or number written over a text column: tampering) gives NULL, which makes the
 * whole text NULL: the verifier then takes its slow path for that row instead of SQLite refusing the query.
 */
const text = (column: string) => `iif(typeof(${column}) IN ('text', 'null'), json_quote(${column}), NULL)`;
const FIELD_SQL: Record<(typeof STORED_RECORD_LAYOUT.keys)[number], string> = {
  actor: text('actor'),
  at: text('at'),
  data: "iif(typeof(data) = 'text', data, NULL)",
  prev: text('prev'),
  runId: text('run_id'),
  seq: 'seq',
  sessionId: text('session_id'),
  type: text('type'),
};

/** The text a row's hash covers, built by SQLite (its json_quote escapes as JSON.stringify does; tested). */
const HASHED_SQL =
  `'${STORED_RECORD_LAYOUT.tag}' || char(0) || '{' || ` +
  STORED_RECORD_LAYOUT.keys.map((key, i) => `'${i ? ',' : ''}"${key}":' || ${FIELD_SQL[key]}`).join(' || ') +
  " || '}'";

/**
 * Rows in storage order (rowid), in pages of raw arrays, each with the text its hash covers built by SQLite: what
 * the verifier walks, so a moved row shows. Pages by rowid instead of one open iterator, `raw()` instead of an
 * object per row, and one string per row instead of six: reading and converting the columns cost more than the
 * hashing (docs/benchmarks.md, "Audit verify").
 */
function* auditPagesToVerify(db: Db): IterableIterator<VerifyRow[]> {
  // PostgreSQL has no rowid and no NUL in a text value: its rows go in seq order (the primary key; rows cannot move
  // there without the append-only triggers' owner), and each is hashed the slow way (verify.ts: `hashed` NULL).
  const sql =
    dialectOf(db) === 'postgres'
      ? `SELECT seq, NULL, hash, prev, seq FROM audit WHERE seq > ? ORDER BY seq LIMIT ${VERIFY_PAGE}`
      : `SELECT seq, ${HASHED_SQL}, hash, prev, rowid FROM audit WHERE rowid > ? ORDER BY rowid LIMIT ${VERIFY_PAGE}`;
  const page = db.prepare(sql).raw();
  let after = 0;
  for (;;) {
    const rows = page.all(after) as VerifyRow[];
    if (rows.length === 0) return;
    after = rows[rows.length - 1]![4];
    yield rows;
  }
}

/** One row by its storage position. */
function auditRowAt(db: Db, rowid: number): AuditRow | undefined {
  const column = dialectOf(db) === 'postgres' ? 'seq' : 'rowid'; // the position auditPagesToVerify hands out
  return db.prepare(`SELECT * FROM audit WHERE ${column} = ?`).get(rowid) as AuditRow | undefined;
}

/** How many audit rows are stored. */
function auditCount(db: Db): number {
  return db.prepare('SELECT count(*) FROM audit').pluck().get() as number;
}

/** Rows after `seq`, in seq order. */
function auditRowsAfter(db: Db, seq: number): IterableIterator<AuditRow> {
  return db.prepare('SELECT * FROM audit WHERE seq > ? ORDER BY seq').iterate(seq) as IterableIterator<AuditRow>;
}

/** The highest seq (null when empty). */
function maxAuditSeq(db: Db): number | null {
  return db.prepare('SELECT max(seq) FROM audit').pluck().get() as number | null;
}

/** Every signed checkpoint, by seq. */
function auditCheckpoints(db: Db): CheckpointRow[] {
  return db.prepare('SELECT seq, head, key_id, signature FROM audit_checkpoints ORDER BY seq').all() as CheckpointRow[];
}

/**
 * Every key's record, by seq. The type is a literal, not a parameter: so the query matches the partial index of these
 * rows (migration 18) and reads a handful of rows at every store open instead of scanning the whole log.
 */
function auditKeyRecords(db: Db): AuditRow[] {
  return db.prepare(`SELECT * FROM audit WHERE type = '${KEY_CREATED}' ORDER BY seq`).all() as AuditRow[];
}

/** The audit log's storage on this database (host/audit/auditStorage.ts). */
export function auditTable(db: Db): AuditStorage {
  const writer = auditWriter(db);
  return {
    ...writer,
    rows: (filter) => auditRows(db, filter),
    pagesToVerify: () => auditPagesToVerify(db),
    rowAt: (rowid) => auditRowAt(db, rowid),
    count: () => auditCount(db),
    rowsAfter: (seq) => auditRowsAfter(db, seq),
    maxSeq: () => maxAuditSeq(db),
    checkpoints: () => auditCheckpoints(db),
    keyRecords: () => auditKeyRecords(db),
  };
}
