// A data folder's audit key enters the chain of the database it writes to (docs/scale-out.md §4, "The audit as one
// chain"): once, with its public key, whether the key file is new or the folder already had it. Real SQLite files,
// real keys; the processes racing at start and PostgreSQL are test/integration/postgres/auditJoin.test.ts's.
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  auditKeyPaths,
  createAuditKey,
  keyIdOf,
  loadOrCreateAuditKey,
  spkiBase64,
} from '../../../host/audit/auditKey.js';
import { AuditLog } from '../../../host/audit/auditLog.js';
import { auditTable } from '../../../host/state/auditTable.js';
import { openDatabase, type Db } from '../../../host/state/db.js';
import { migrate } from '../../../host/state/migrate.js';
import { Store } from '../../../host/state/store.js';
import { rawDb } from '../../helpers/rawDb.js';
import { tempStore } from '../../helpers/store.js';

/** The store's audit records of types `audit.key_created` and `state.migrated`, in order, as [type, data]. */
function startRecords(store: Store): [string, unknown][] {
  return store.audit
    .records({ types: ['audit.key_created', 'state.migrated'] })
    .map((r) => [r.type, r.type === 'state.migrated' ? 'migrated' : r.data]);
}

/** What a folder's `audit.key_created` record carries. */
const keyData = (dataDir: string) => {
  const key = loadOrCreateAuditKey(dataDir);
  return { keyId: key.keyId, publicKey: spkiBase64(key.publicKey) };
};

describe("a data folder's key in the chain", () => {
  it('a new key file: its record once, before the migrations; a second open writes nothing', () => {
    const { store, dataDir } = tempStore();
    const records = startRecords(store);
    expect(records).toEqual([
      ['audit.key_created', keyData(dataDir)],
      ['state.migrated', 'migrated'],
    ]);
    const count = store.audit.records().length;
    store.close();
    const again = Store.open({ dataDir });
    expect(startRecords(again)).toEqual(records);
    expect(again.audit.records()).toHaveLength(count);
    again.close();
  });

  it('a folder that has its key opens a database without its record: the record once, with its public key', () => {
    const { store, dataDir } = tempStore();
    store.close();
    const key = readFileSync(auditKeyPaths(dataDir).privatePath, 'utf8');
    // Another database under the same key file (a database restored or shared from elsewhere).
    for (const file of ['paddock.db', 'paddock.db-wal', 'paddock.db-shm']) rmSync(join(dataDir, file), { force: true });
    const joined = Store.open({ dataDir });
    expect(startRecords(joined)).toEqual([
      ['audit.key_created', keyData(dataDir)],
      ['state.migrated', 'migrated'],
    ]);
    expect(readFileSync(auditKeyPaths(dataDir).privatePath, 'utf8')).toBe(key); // the key it had, not a new one
    joined.close();
    const again = Store.open({ dataDir });
    expect(startRecords(again).filter(([type]) => type === 'audit.key_created')).toHaveLength(1);
    again.close();
  });

  it("a record naming the key's id alone, or its id with another key, does not count as the key's", () => {
    const db: Db = openDatabase(join(mkdtempSync(join(tmpdir(), 'paddock-keyjoin-')), 'paddock.db'));
    migrate(db);
    const key = loadOrCreateAuditKey(mkdtempSync(join(tmpdir(), 'paddock-keyjoin-key-')));
    const log = new AuditLog(auditTable(db), key);
    const other = generateKeyPairSync('ed25519').publicKey;
    db.transaction(() => {
      // As written before records carried the key, and a record claiming the id with a key that is not this one.
      log.append({ type: 'audit.key_created', actor: 'host', data: { keyId: key.keyId } });
      log.append({
        type: 'audit.key_created',
        actor: 'host',
        data: { keyId: key.keyId, publicKey: spkiBase64(other) },
      });
    })();
    expect(keyIdOf(other)).not.toBe(key.keyId);
    expect(log.hasKeyRecord()).toBe(false);
    expect(db.transaction(() => log.introduceKey())()).toBe(true);
    expect(log.hasKeyRecord()).toBe(true);
    expect(db.transaction(() => log.introduceKey())()).toBe(false);
    expect(log.records({ types: ['audit.key_created'] }).map((r) => r.data)).toEqual([
      { keyId: key.keyId },
      { keyId: key.keyId, publicKey: spkiBase64(other) },
      { keyId: key.keyId, publicKey: spkiBase64(key.publicKey) },
    ]);
    db.close();
  });

  it('the look-up at every open reads the index of key records, not the log', () => {
    const { store } = tempStore();
    const db = rawDb(store);
    const statements: string[] = [];
    // The storage's own statement, caught as it is prepared, planned on the store's database.
    const watched = { prepare: (sql: string) => (statements.push(sql), db.prepare(sql)) } as unknown as Db;
    auditTable(watched).keyRecords();
    expect(statements).toHaveLength(1);
    const plan = db.prepare(`EXPLAIN QUERY PLAN ${statements[0]!}`).all() as { detail: string }[];
    expect(plan.map((p) => p.detail)).toEqual(['SCAN audit USING INDEX audit_key_records']);
    store.close();
  });

  it('a process that finds the key file made by another between its look and its write uses that key', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'paddock-keyjoin-race-'));
    const first = loadOrCreateAuditKey(dataDir);
    expect(first.created).toBe(true);
    const file = readFileSync(auditKeyPaths(dataDir).privatePath, 'utf8');
    // The loser of two processes creating the key: it found no file, generated its own, and links it too late.
    const second = createAuditKey(dataDir);
    expect(second).toMatchObject({ keyId: first.keyId, created: false });
    expect(readFileSync(auditKeyPaths(dataDir).privatePath, 'utf8')).toBe(file);
    expect(readdirSync(join(dataDir, 'keys')).sort()).toEqual(['audit-ed25519.pem', 'audit-ed25519.pub.pem']);
  });
});
