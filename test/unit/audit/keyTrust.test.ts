// Several hosts signing one audit chain (docs/scale-out.md §4, "The audit as one chain"): each host appends with its
// own key; a verifier trusts a pinned set, or grows trust from its root key along checkpoints. Real SQLite storage,
// real Ed25519 keys; the "hosts" are two AuditLogs over one table, as two hosts on one database would be.
import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { keyIdOf, spkiBase64, type AuditKey } from '../../../host/audit/auditKey.js';
import { AuditLog, CHECKPOINT_EVERY, checkpointBody } from '../../../host/audit/auditLog.js';
import type { AuditStorage } from '../../../host/audit/auditStorage.js';
import { verifyAudit } from '../../../host/audit/verify.js';
import { auditTable } from '../../../host/state/auditTable.js';
import { openDatabase, type Db } from '../../../host/state/db.js';
import { migrate } from '../../../host/state/migrate.js';

function newKey(): AuditKey {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { privateKey, publicKey, keyId: keyIdOf(publicKey), created: true };
}

/** A migrated database and its audit storage. */
function chain(): { db: Db; storage: AuditStorage } {
  const db = openDatabase(join(mkdtempSync(join(tmpdir(), 'paddock-keytrust-')), 'paddock.db'));
  migrate(db);
  return { db, storage: auditTable(db) };
}

/** A host joining: its key's record (public key included), as the store writes it at a key's creation. */
function join_(log: AuditLog, key: AuditKey): void {
  log.append({
    type: 'audit.key_created',
    actor: 'host',
    data: { keyId: key.keyId, publicKey: spkiBase64(key.publicKey) },
  });
}

function facts(log: AuditLog, n: number): void {
  for (let i = 0; i < n; i++) log.append({ type: 'test.fact', actor: 'host', data: { i } });
}

describe('audit keys across hosts', () => {
  it("a second host's key counts once a checkpoint of the first host covers its introduction", () => {
    const { storage } = chain();
    const [a, b] = [newKey(), newKey()];
    const hostA = new AuditLog(storage, a);
    const hostB = new AuditLog(storage, b);
    join_(hostA, a);
    facts(hostA, 99); // records 2–100
    join_(hostB, b); // record 101
    facts(hostB, CHECKPOINT_EVERY - 101); // B writes record 256: B signs it
    facts(hostA, CHECKPOINT_EVERY); // A writes record 512: A signs it, covering B's record 101
    expect(storage.checkpoints().map((cp) => [cp.seq, cp.key_id])).toEqual([
      [256, b.keyId],
      [512, a.keyId],
    ]);
    const verdict = verifyAudit(storage, a.publicKey);
    expect(verdict).toMatchObject({ ok: true, records: 512, checkpoints: 2, signedUpTo: 512 });
    if (!verdict.ok) return;
    expect(verdict.keys).toEqual([
      { keyId: a.keyId, introducedAt: null, trusted: true, checkpoints: 1 },
      { keyId: b.keyId, introducedAt: 101, trusted: true, checkpoints: 1 },
    ]);
  });

  it("until then the second host's checkpoints do not count: the tail is reported as held by hashes only", () => {
    const { storage } = chain();
    const [a, b] = [newKey(), newKey()];
    const hostA = new AuditLog(storage, a);
    const hostB = new AuditLog(storage, b);
    join_(hostA, a);
    facts(hostA, CHECKPOINT_EVERY - 1); // A signs 256
    join_(hostB, b); // 257
    facts(hostB, CHECKPOINT_EVERY + 10); // B signs 512; the log ends at 523
    const verdict = verifyAudit(storage, a.publicKey);
    expect(verdict).toMatchObject({ ok: true, records: 523, signedUpTo: 256 });
    if (verdict.ok) expect(verdict.keys[1]).toMatchObject({ keyId: b.keyId, introducedAt: 257, trusted: false });
  });

  it("an attacker's own key record and re-signed tail never count, and a forged checkpoint over A's fails", () => {
    const { db, storage } = chain();
    const [a, attacker] = [newKey(), newKey()];
    const hostA = new AuditLog(storage, a);
    join_(hostA, a);
    facts(hostA, CHECKPOINT_EVERY + 9); // A signs 256; log at 266
    // Someone who can write the database appends a key record of their own and a tail they sign.
    const forger = new AuditLog(storage, attacker);
    join_(forger, attacker);
    facts(forger, CHECKPOINT_EVERY * 2); // the attacker's checkpoints at 512 and 768
    const verdict = verifyAudit(storage, a.publicKey);
    expect(verdict).toMatchObject({ ok: true, signedUpTo: 256 });
    if (verdict.ok) expect(verdict.keys.find((k) => k.keyId === attacker.keyId)).toMatchObject({ trusted: false });
    // A checkpoint claiming A's key id, signed by the attacker: a bad signature whoever is trusted.
    const head = storage.checkpoints().find((cp) => cp.seq === 512)!.head;
    db.prepare('UPDATE audit_checkpoints SET key_id = ?, signature = ? WHERE seq = 512').run(
      a.keyId,
      sign(null, Buffer.from(checkpointBody(512, head)), attacker.privateKey).toString('base64'),
    );
    expect(verifyAudit(storage, a.publicKey)).toMatchObject({ ok: false, problem: 'bad signature', seq: 512 });
  });

  it("a chain signed from its first record by the attacker's own key fails: no checkpoint of a trusted key", () => {
    const { storage } = chain();
    const [a, attacker] = [newKey(), newKey()];
    const forger = new AuditLog(storage, attacker);
    join_(forger, attacker);
    facts(forger, CHECKPOINT_EVERY * 2);
    const verdict = verifyAudit(storage, a.publicKey);
    expect(verdict).toMatchObject({ ok: false, problem: 'bad signature', seq: 256 });
    if (!verdict.ok) expect(verdict.detail).toContain(`no checkpoint is signed by a trusted key (${a.keyId})`);
  });

  it('a checkpoint by a key no record introduced fails, and a pinned set refuses every key outside it', () => {
    const { storage } = chain();
    const [a, b, stranger] = [newKey(), newKey(), newKey()];
    const hostA = new AuditLog(storage, a);
    join_(hostA, a);
    facts(hostA, 99);
    join_(new AuditLog(storage, b), b);
    facts(new AuditLog(storage, b), CHECKPOINT_EVERY - 101); // B signs 256
    facts(hostA, CHECKPOINT_EVERY); // A signs 512
    // Pinned: exactly the set given.
    expect(verifyAudit(storage, { pinned: [a.publicKey, b.publicKey] })).toMatchObject({ ok: true, signedUpTo: 512 });
    const onlyA = verifyAudit(storage, { pinned: [a.publicKey] });
    expect(onlyA).toMatchObject({ ok: false, problem: 'bad signature', seq: 256 });
    if (!onlyA.ok) expect(onlyA.detail).toContain(`not one of the pinned keys (${a.keyId})`);
    // A host whose key never entered the chain signs the next checkpoint.
    facts(new AuditLog(storage, stranger), CHECKPOINT_EVERY);
    const verdict = verifyAudit(storage, a.publicKey);
    expect(verdict).toMatchObject({ ok: false, problem: 'bad signature', seq: 768 });
    if (!verdict.ok) expect(verdict.detail).toContain(`${stranger.keyId}, which no record before it introduced`);
  });

  it("a key record edited to carry the attacker's key breaks the chain before it can introduce anything", () => {
    const { db, storage } = chain();
    const [a, b, attacker] = [newKey(), newKey(), newKey()];
    const hostA = new AuditLog(storage, a);
    join_(hostA, a);
    join_(new AuditLog(storage, b), b); // record 2
    facts(hostA, CHECKPOINT_EVERY * 2 - 2); // A signs 256 and 512
    db.exec('DROP TRIGGER IF EXISTS audit_no_update');
    db.prepare('UPDATE audit SET data = ? WHERE seq = 2').run(
      JSON.stringify({ keyId: attacker.keyId, publicKey: spkiBase64(attacker.publicKey) }),
    );
    expect(verifyAudit(storage, a.publicKey)).toMatchObject({ ok: false, problem: 'edited', seq: 2 });
  });
});
