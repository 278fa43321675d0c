import { auditTable } from '../../../host/state/auditTable.js';
import { createHash, createPublicKey, generateKeyPairSync, sign } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { auditKeyPaths } from '../../../host/audit/auditKey.js';
import { canonicalJson } from '../../../host/audit/canonicalJson.js';
import { verifyAudit, type AuditProgress } from '../../../host/audit/verify.js';
import { tempStore } from '../../helpers/store.js';

/** A data folder with 600 audit records (checkpoints at 256, 512 and the head) and a raw handle to tamper with. */
function auditedDataDir(): string {
  const { store, dataDir } = tempStore();
  store.transaction(() => {
    for (let i = 0; i < 598; i++)
      store.audit.append({
        type: 'test.fact',
        actor: 'host',
        data: { i, cost: 0.25, nested: { z: 1, a: [true, null] } },
      });
  });
  store.close();
  return dataDir;
}

function tamper(dataDir: string, sql: string): void {
  const db = new Database(join(dataDir, 'paddock.db'));
  db.exec('DROP TRIGGER IF EXISTS audit_no_update; DROP TRIGGER IF EXISTS audit_no_delete;');
  db.exec(sql);
  db.close();
}

function verify(dataDir: string, onProgress?: AuditProgress) {
  const db = new Database(join(dataDir, 'paddock.db'), { readonly: true });
  try {
    const key = createPublicKey(readFileSync(auditKeyPaths(dataDir).publicPath));
    return verifyAudit(auditTable(db), key, onProgress);
  } finally {
    db.close();
  }
}

describe('tamper-evident audit log', () => {
  let dataDir: string;
  beforeEach(() => {
    dataDir = auditedDataDir();
  });

  it('verifies a clean log: 600 records, 3 signed checkpoints', () => {
    expect(verify(dataDir)).toMatchObject({ ok: true, records: 600, checkpoints: 3 });
  });

  it('tells its progress page by page, ending at the total', () => {
    const seen: [number, number][] = [];
    expect(verify(dataDir, (checked, total) => seen.push([checked, total]))).toMatchObject({ ok: true });
    expect(seen.at(-1)).toEqual([600, 600]);
    expect(seen.every(([checked], i) => i === 0 || checked > seen[i - 1]![0])).toBe(true);
  });

  it('accepts a record whose data was stored in another JSON form of the same content (the slow path)', () => {
    // What a re-encoding of the stored text does (whitespace, key order): the content hashed is unchanged.
    tamper(dataDir, `UPDATE audit SET data = replace(replace(data, ':', ': '), ',', ', ') WHERE seq = 101`);
    expect(verify(dataDir)).toMatchObject({ ok: true, records: 600 });
  });

  it('calls data that is not JSON malformed, also with a matching hash forged past the last checkpoint', () => {
    tamper(dataDir, `UPDATE audit SET data = '{"i":' WHERE seq = 100`);
    expect(verify(dataDir)).toMatchObject({ ok: false, problem: 'malformed', seq: 100 });

    const { store, dataDir: unsigned } = tempStore();
    store.transaction(() => {
      for (let i = 0; i < 300; i++) store.audit.append({ type: 'test.fact', actor: 'host', data: { i } });
    });
    // Not closed, so no checkpoint at the head: nothing signs records 257–300. The last one is rewritten with a hash
    // of its new bytes, so only parsing its data can tell.
    const db = new Database(join(unsigned, 'paddock.db'));
    const bytes = '{"i":';
    const hashed = db
      .prepare(
        `SELECT 'paddock-audit-v1' || char(0) || '{"actor":' || json_quote(actor) || ',"at":' || json_quote(at) || ` +
          `',"data":' || ? || ',"prev":' || json_quote(prev) || ',"runId":null,"seq":300,"sessionId":null,` +
          `"type":' || json_quote(type) || '}' FROM audit WHERE seq = 300`,
      )
      .pluck()
      .get(bytes) as string;
    db.exec('DROP TRIGGER IF EXISTS audit_no_update;');
    db.prepare('UPDATE audit SET data = ?, hash = ? WHERE seq = 300').run(
      bytes,
      createHash('sha256').update(hashed).digest('hex'),
    );
    db.close();
    expect(verify(unsigned)).toMatchObject({ ok: false, problem: 'malformed', seq: 300 });
    store.close();
  });

  it('answers a verdict, not an error, for a field stored as a BLOB or a number (edited; same bytes: intact)', () => {
    tamper(dataDir, `UPDATE audit SET data = cast(data AS blob) WHERE seq = 20`); // the same bytes: the same content
    expect(verify(dataDir)).toMatchObject({ ok: true, records: 600 });
    tamper(dataDir, `UPDATE audit SET actor = cast('evil' AS blob) WHERE seq = 10`);
    expect(verify(dataDir)).toMatchObject({ ok: false, problem: 'edited', seq: 10 });
    tamper(dataDir, `UPDATE audit SET actor = 'host', type = 42 WHERE seq = 10`);
    expect(verify(dataDir)).toMatchObject({ ok: false, problem: 'edited', seq: 10 });
  });

  it('detects an edited byte', () => {
    tamper(dataDir, `UPDATE audit SET data = replace(data, '"i":', '"i":1') WHERE seq = 101`);
    expect(verify(dataDir)).toMatchObject({ ok: false, problem: 'edited', seq: 101 });
  });

  it('detects a dropped row', () => {
    tamper(dataDir, 'DELETE FROM audit WHERE seq = 300');
    expect(verify(dataDir)).toMatchObject({ ok: false, problem: 'dropped', seq: 300 });
  });

  it('detects a dropped row whose successors were renumbered to hide the gap', () => {
    tamper(dataDir, 'DELETE FROM audit WHERE seq = 300; UPDATE audit SET seq = seq - 1 WHERE seq > 300;');
    expect(verify(dataDir)).toMatchObject({ ok: false, problem: 'dropped', seq: 300 });
  });

  it('detects two swapped rows', () => {
    tamper(
      dataDir,
      'UPDATE audit SET seq = -1 WHERE seq = 200; UPDATE audit SET seq = 200 WHERE seq = 201; UPDATE audit ' +
        'SET seq = 201 WHERE seq = -1;',
    );
    expect(verify(dataDir)).toMatchObject({ ok: false, problem: 'reordered', seq: 200 });
  });

  it('detects a truncated tail behind the last checkpoint', () => {
    tamper(dataDir, 'DELETE FROM audit WHERE seq > 550');
    expect(verify(dataDir)).toMatchObject({ ok: false, problem: 'truncated', seq: 600 });
  });

  it('detects a replaced key', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const { privatePath, publicPath } = auditKeyPaths(dataDir);
    writeFileSync(privatePath, privateKey.export({ type: 'pkcs8', format: 'pem' }));
    writeFileSync(publicPath, publicKey.export({ type: 'spki', format: 'pem' }));
    const verdict = verify(dataDir);
    expect(verdict).toMatchObject({ ok: false, problem: 'bad signature', seq: 256 });
  });

  it('detects a rewritten chain when the verifier pins the original key', () => {
    // Someone with the database and a key of their own re-signs a checkpoint: the pinned key catches it.
    const pinned = createPublicKey(readFileSync(auditKeyPaths(dataDir).publicPath));
    const { privateKey } = generateKeyPairSync('ed25519');
    const db = new Database(join(dataDir, 'paddock.db'));
    const hash = String(db.prepare('SELECT hash FROM audit WHERE seq = 512').pluck().get());
    const body = `paddock-audit\n512\n${Buffer.from(hash, 'hex').toString('base64')}\n`;
    db.prepare('UPDATE audit_checkpoints SET signature = ? WHERE seq = 512').run(
      sign(null, Buffer.from(body), privateKey).toString('base64'),
    );
    expect(verifyAudit(auditTable(db), pinned)).toMatchObject({ ok: false, problem: 'bad signature', seq: 512 });
    db.close();
  });
});

describe('canonical JSON', () => {
  it('sorts keys, drops undefined, refuses floats', () => {
    expect(canonicalJson({ b: 1, a: [true, null, 'x'], c: undefined, d: { z: 0, y: -3 } })).toBe(
      '{"a":[true,null,"x"],"b":1,"d":{"y":-3,"z":0}}',
    );
    expect(() => canonicalJson({ cost: 0.1 })).toThrow(/safe integers/);
  });
});
