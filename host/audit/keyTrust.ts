import { createPublicKey, verify as verifySignature, type KeyObject } from 'node:crypto';
import type { CheckpointRow } from './auditStorage.js';
import { keyIdOf } from './auditKey.js';
import { checkpointBody } from './auditLog.js';

/**
 * Which keys the verifier trusts (docs/scale-out.md §4, "The audit as one chain"):
 * - `pinned`: exactly these keys (`paddock audit verify --key`, repeatable); a checkpoint by another key fails;
 * - `root`: this key (the verifying data folder's), and every key whose `audit.key_created` record (carrying the
 *   public key) a checkpoint of an already trusted key covers — trust grows only along signatures.
 */
export type AuditTrust = { pinned: KeyObject[] } | { root: KeyObject };

/** One key as the verdict reports it. */
export interface KeyReport {
  keyId: string;
  /** The seq of the record that introduced it into the chain (null: pinned, the root, or never introduced). */
  introducedAt: number | null;
  /** Whether its checkpoints count (pinned, the root, or vouched for by a trusted checkpoint). */
  trusted: boolean;
  /** Checkpoints it signed. */
  checkpoints: number;
}

/** What a checkpoint's signature says: a failure's detail, or whether it counts (by a trusted key). */
export type CheckpointJudgement = { bad: string } | { counts: boolean };

/** The trust state of one verification walk: keys introduced as the walk passes their records, checkpoints judged. */
export class KeyTrust {
  private readonly keys = new Map<string, { key: KeyObject; report: KeyReport }>();
  private readonly pinned: boolean;
  /** The highest seq a counted checkpoint covers. */
  signedUpTo = 0;

  constructor(trust: AuditTrust) {
    this.pinned = 'pinned' in trust;
    for (const key of 'pinned' in trust ? trust.pinned : [trust.root]) this.add(key, null, true);
  }

  /** The walk reached an intact `audit.key_created` record at `seq`; `publicKey`: its SPKI DER, base64 (if any). */
  introduce(seq: number, publicKey: unknown): void {
    if (this.pinned || typeof publicKey !== 'string') return; // old records name only the id: nothing to learn
    let key: KeyObject;
    try {
      key = createPublicKey({ key: Buffer.from(publicKey, 'base64'), format: 'der', type: 'spki' });
    } catch {
      return; // not a key: introduces nothing (the record itself is intact, its hash says so)
    }
    if (!this.keys.has(keyIdOf(key))) this.add(key, seq, false);
  }

  /**
   * A checkpoint the walk reached (its head already matched the chain): its signature checked against the key its
   * `key_id` names; a trusted key's checkpoint then vouches for every key introduced up to its seq.
   */
  judge(cp: CheckpointRow): CheckpointJudgement {
    const known = this.keys.get(cp.key_id);
    if (!known)
      return {
        bad: this.pinned
          ? `checkpoint at ${cp.seq} is signed by key ${cp.key_id}, not one of the pinned keys (${this.trustedIds()})`
          : `checkpoint at ${cp.seq} is signed by key ${cp.key_id}, which no record before it introduced ` +
            `(trusted: ${this.trustedIds()})`,
      };
    if (
      !verifySignature(
        null,
        Buffer.from(checkpointBody(cp.seq, cp.head)),
        known.key,
        Buffer.from(cp.signature, 'base64'),
      )
    )
      return { bad: `checkpoint at ${cp.seq} is not signed by key ${cp.key_id}, which it names` };
    known.report.checkpoints += 1;
    if (!known.report.trusted) return { counts: false };
    for (const { report } of this.keys.values())
      if (report.introducedAt !== null && report.introducedAt <= cp.seq) report.trusted = true;
    this.signedUpTo = Math.max(this.signedUpTo, cp.seq);
    return { counts: true };
  }

  /** Every key the walk knew of, in the order it learnt them. */
  reports(): KeyReport[] {
    return [...this.keys.values()].map(({ report }) => ({ ...report }));
  }

  private add(key: KeyObject, introducedAt: number | null, trusted: boolean): void {
    const keyId = keyIdOf(key);
    this.keys.set(keyId, { key, report: { keyId, introducedAt, trusted, checkpoints: 0 } });
  }

  /** The ids of the keys trusted so far, comma-separated (for messages). */
  trustedIds(): string {
    return [...this.keys.values()]
      .filter(({ report }) => report.trusted)
      .map(({ report }) => report.keyId)
      .join(', ');
  }
}
