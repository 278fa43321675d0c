import { hash, sign } from 'node:crypto';
import { KEY_CREATED, STORED_RECORD_LAYOUT, type AuditStorage } from './auditStorage.js';
import { spkiBase64, type AuditKey } from './auditKey.js';
import { canonicalJson, toCanonicalSafe, wellFormed } from './canonicalJson.js';

/** The hash that precedes the first record. */
export const GENESIS = '0'.repeat(64);
/** Records between signed checkpoints. */
export const CHECKPOINT_EVERY = 256;

/** What a caller audits; `seq`, `at`, `prev` and `hash` are added by the log. */
export interface AuditEntry {
  type: string;
  /** `host`, `runner:<id>`, `user:<name>`, … */
  actor: string;
  sessionId?: string | null;
  runId?: string | null;
  data: unknown;
}

/** A stored audit record. */
export interface AuditRecord {
  seq: number;
  at: string;
  type: string;
  actor: string;
  sessionId: string | null;
  runId: string | null;
  data: unknown;
  prev: string;
  hash: string;
}

/** Stored audit records in order, optionally only those of one run or of some types. */
export function* readAuditRecords(
  storage: AuditStorage,
  filter: { runId?: string; types?: string[] } = {},
): IterableIterator<AuditRecord> {
  for (const row of storage.rows(filter)) {
    yield {
      seq: row.seq as number,
      at: row.at as string,
      type: row.type as string,
      actor: row.actor as string,
      sessionId: (row.session_id as string | null) ?? null,
      runId: (row.run_id as string | null) ?? null,
      data: JSON.parse(String(row.data)),
      prev: row.prev as string,
      hash: row.hash as string,
    };
  }
}

/** Redacts secrets from audit data before it is hashed (the redactor comes with the secrets work). */
export type Redactor = (value: unknown) => unknown;

/** The hash of a record: SHA-256 over a domain tag and the canonical JSON of every field but `hash`. */
export function hashRecord(record: Omit<AuditRecord, 'hash'>): string {
  const body = canonicalJson({
    seq: record.seq,
    at: record.at,
    type: record.type,
    actor: record.actor,
    sessionId: record.sessionId,
    runId: record.runId,
    data: record.data,
    prev: record.prev,
  });
  return hash('sha256', `${STORED_RECORD_LAYOUT.tag}\0${body}`);
}

/** The signed text of a checkpoint (a C2SP-style note body). */
export function checkpointBody(seq: number, head: string): string {
  return `paddock-audit\n${seq}\n${Buffer.from(head, 'hex').toString('base64')}\n`;
}

/**
 * Appends hash-chained records. Must be called inside the transaction of the state change it
 * records (the store does this), so the record and the change commit together.
 */
export class AuditLog {
  constructor(
    private readonly rows: AuditStorage,
    private readonly key: AuditKey,
    private readonly redact: Redactor = (v) => v,
  ) {}

  /** Append one record (inside the caller's transaction); checkpoints every {@link CHECKPOINT_EVERY}. */
  append(entry: AuditEntry, at = new Date().toISOString()): AuditRecord {
    const last = this.rows.head();
    const unhashed = {
      seq: (last?.seq ?? 0) + 1,
      at,
      type: wellFormed(entry.type),
      actor: wellFormed(entry.actor),
      sessionId: entry.sessionId == null ? null : wellFormed(entry.sessionId),
      runId: entry.runId == null ? null : wellFormed(entry.runId),
      data: toCanonicalSafe(this.redact(entry.data)),
      prev: last?.hash ?? GENESIS,
    };
    const record = { ...unhashed, hash: hashRecord(unhashed) };
    this.rows.insert({ ...record, data: canonicalJson(record.data) });
    if (record.seq % CHECKPOINT_EVERY === 0) this.checkpoint(record.seq, record.hash, at);
    return record;
  }

  /**
   * Whether the chain holds an `audit.key_created` record carrying this log's public key. By the key itself, not its
   * id: a record naming the id alone (written before records carried the key) teaches a verifier nothing, and one
   * with this id but another key is not this key's.
   */
  hasKeyRecord(): boolean {
    const mine = spkiBase64(this.key.publicKey);
    return this.rows.keyRecords().some((row) => {
      try {
        return (JSON.parse(row.data) as { publicKey?: unknown }).publicKey === mine;
      } catch {
        return false; // not JSON: not a record of this key (the verifier reports it)
      }
    });
  }

  /**
   * Append the record that introduces this log's key into the chain (its id and its public key, SPKI DER base64:
   * keyTrust.ts learns the key from it) unless the chain has one. Inside a write transaction, which serialises the
   * check with every other writer: processes or hosts starting together append it once. Returns whether it did.
   */
  introduceKey(): boolean {
    if (this.hasKeyRecord()) return false;
    this.append({
      type: KEY_CREATED,
      actor: 'host',
      data: { keyId: this.key.keyId, publicKey: spkiBase64(this.key.publicKey) },
    });
    return true;
  }

  /** Stored records, oldest first (see {@link readAuditRecords}). */
  records(filter: { runId?: string; types?: string[] } = {}): AuditRecord[] {
    return [...readAuditRecords(this.rows, filter)];
  }

  /** Sign the current head (e.g. when the store closes). No-op on an empty log. */
  checkpointHead(): void {
    const last = this.rows.head();
    if (last) this.checkpoint(last.seq, last.hash, new Date().toISOString());
  }

  private checkpoint(seq: number, head: string, at: string): void {
    const signature = sign(null, Buffer.from(checkpointBody(seq, head)), this.key.privateKey).toString('base64');
    this.rows.insertCheckpoint(seq, at, head, this.key.keyId, signature);
  }
}
