// A data folder joining a database with the audit key it already had (docs/scale-out.md §4, "The audit as one
// chain"), on both stores, with real processes: the real `paddock` command, and store processes racing at start.
// Host A's folder signs the chain first; host B's folder made its key on a store of its own, then opens A's database
// (on PostgreSQL: the same URL; on SQLite: A's paddock.db, linked into B's folder — SQLite opens the link's target,
// its WAL beside it, so the two folders share one database on this machine). B's key must enter the chain once, with
// its public key, so that a verifier starting from A's key learns it and trusts it once A's checkpoint covers it —
// that is, once A signs a record after it (a close on a head B already signed adds no checkpoint: one per record).
import { createPublicKey } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { auditKeyPaths, keyIdOf, spkiBase64 } from '../../../host/audit/auditKey.js';
import type { AuditVerdict } from '../../../host/audit/verify.js';
import { auditTable } from '../../../host/state/auditTable.js';
import { openStateReadOnly } from '../../../host/state/stateLocation.js';
import { Store } from '../../../host/state/store.js';
import { paddock } from '../../helpers/cli.js';
import { storeProcess } from '../../helpers/storeProcess.js';
import { postgresBackend, sqliteBackend, type StoreBackend } from '../../helpers/storeBackends.js';

/** A data folder's public key, as its `audit.key_created` record carries it, and its id. */
function keyOf(dataDir: string): { keyId: string; publicKey: string } {
  const key = createPublicKey(readFileSync(auditKeyPaths(dataDir).publicPath));
  return { keyId: keyIdOf(key), publicKey: spkiBase64(key) };
}

/** The key records of the database at `where`, read as the verifier's storage reads them. */
function keyRecords(where: { dataDir: string; databaseUrl?: string }) {
  const db = openStateReadOnly(where)!;
  try {
    return auditTable(db)
      .keyRecords()
      .map((row) => ({ seq: row.seq, ...(JSON.parse(row.data) as { keyId: string; publicKey: string }) }));
  } finally {
    db.close();
  }
}

/** `paddock runs list` in `dataDir`: a start of the host's state (open, migrate, recover) and a clean close. */
async function start(dataDir: string, env: Record<string, string>) {
  const run = await paddock(['runs', 'list'], { dataDir, env });
  expect(run.exitCode, run.stderr).toBe(0);
}

/** `paddock audit verify --json` with `dataDir`'s key as the root of trust: the verdict. */
async function verifyFrom(dataDir: string, env: Record<string, string>): Promise<AuditVerdict> {
  const verified = await paddock(['audit', 'verify', '--json'], { dataDir, env });
  expect(verified.exitCode, verified.stdout + verified.stderr).toBe(0);
  return JSON.parse(verified.stdout) as AuditVerdict;
}

/** Point `homeB` at `shared`'s database: the URL on PostgreSQL, A's paddock.db linked into B's folder on SQLite. */
function join_(homeB: string, shared: { dataDir: string; databaseUrl?: string }) {
  if (shared.databaseUrl) return { dataDir: homeB, databaseUrl: shared.databaseUrl };
  for (const file of ['paddock.db', 'paddock.db-wal', 'paddock.db-shm']) rmSync(join(homeB, file), { force: true });
  symlinkSync(join(shared.dataDir, 'paddock.db'), join(homeB, 'paddock.db'));
  return { dataDir: homeB };
}

for (const backend of [sqliteBackend(), postgresBackend()] as StoreBackend[]) {
  describe(`a data folder with its own audit key joins a database: ${backend.name}`, () => {
    afterAll(() => backend.close());

    it('writes its key once; verify from the first folder learns it, then trusts it under its checkpoint', async () => {
      const shared = backend.fresh();
      const homeA = shared.dataDir;
      const env: Record<string, string> = shared.databaseUrl ? { PADDOCK_DATABASE_URL: shared.databaseUrl } : {};
      await start(homeA, env); // A's key, its record, a checkpoint at the close
      const homeB = mkdtempSync(join(tmpdir(), 'paddock-join-b-'));
      await start(homeB, {}); // B's key, made on B's own SQLite store
      const [a, b] = [keyOf(homeA), keyOf(homeB)];
      expect(keyRecords({ dataDir: homeB }).map((r) => r.keyId)).toEqual([b.keyId]);
      expect(keyRecords(shared)).toEqual([{ seq: 1, ...a }]);

      // Two starts of B on the shared database at once: B's key enters the chain once, after A's records.
      join_(homeB, shared);
      await Promise.all([start(homeB, env), start(homeB, env)]);
      const records = keyRecords(shared);
      expect(records.map(({ keyId, publicKey }) => ({ keyId, publicKey }))).toEqual([a, b]);
      const joinedAt = records[1]!.seq;
      expect(joinedAt).toBeGreaterThan(1);

      // From A's key: B's record is learnt, B's checkpoints (its closes) are checked but do not count yet, and what
      // follows A's last checkpoint holds by its hashes only.
      const before = await verifyFrom(homeA, env);
      if (!before.ok) throw new Error(JSON.stringify(before));
      expect(before.keys).toEqual([
        { keyId: a.keyId, introducedAt: null, trusted: true, checkpoints: expect.any(Number) },
        { keyId: b.keyId, introducedAt: joinedAt, trusted: false, checkpoints: expect.any(Number) },
      ]);
      expect(before.keys[1]!.checkpoints).toBeGreaterThanOrEqual(1);
      expect(before.signedUpTo).toBeLessThan(joinedAt);
      expect(before.signedUpTo).toBeLessThan(before.records);

      // A start of A that writes nothing signs nothing new: one checkpoint per record, and B's close already signed
      // this head. B stays unvouched from A's key until A signs a later record.
      await start(homeA, env);
      const idle = await verifyFrom(homeA, env);
      expect(idle).toMatchObject({ ok: true, signedUpTo: before.signedUpTo, records: before.records });
      // A writes (a token's creation is audited) and its close signs the new head, covering B's record: B is vouched
      // for, the whole chain signed.
      const token = await paddock(['tokens', 'create', '--tenant', 'default', '--role', 'platform'], {
        dataDir: homeA,
        env,
      });
      expect(token.exitCode, token.stderr).toBe(0);
      const after = await verifyFrom(homeA, env);
      if (!after.ok) throw new Error(JSON.stringify(after));
      expect(after.keys.map((k) => [k.keyId, k.introducedAt, k.trusted])).toEqual([
        [a.keyId, null, true],
        [b.keyId, joinedAt, true],
      ]);
      expect(after.records).toBeGreaterThan(before.records);
      expect(after.signedUpTo).toBe(after.records);
      // From B's key too: A's record (seq 1) is covered by B's own checkpoints.
      const fromB = await verifyFrom(homeB, env);
      if (!fromB.ok) throw new Error(JSON.stringify(fromB));
      expect(fromB.keys.map((k) => [k.keyId, k.introducedAt, k.trusted])).toEqual([
        [b.keyId, null, true],
        [a.keyId, 1, true],
      ]);

      // Later starts find their records and write none.
      await start(homeB, env);
      await start(homeA, env);
      expect(keyRecords(shared)).toEqual(records);
    });

    it('processes of the joining folder that all found no record at start write it once', async () => {
      const shared = backend.fresh();
      Store.open(shared).close(); // A: its key and record
      const homeB = mkdtempSync(join(tmpdir(), 'paddock-join-race-'));
      Store.open({ dataDir: homeB }).close(); // B's key, on its own store
      const where = join_(homeB, shared);
      const barrier = mkdtempSync(join(tmpdir(), 'paddock-join-barrier-'));
      const peers = 3;
      const processes = await Promise.all(
        Array.from({ length: peers }, (_, i) =>
          storeProcess('opensStoreTogether.ts', [homeB, where.databaseUrl ?? '', barrier, String(peers), `p${i}`]),
        ),
      );
      for (const p of processes) p.go();
      const outcomes = await Promise.all(processes.map((p) => p.done));
      // Every process looked, found no record and waited for the others before any wrote: a real race.
      expect(outcomes).toEqual(Array.from({ length: peers }, () => ({ held: true })));
      expect(keyRecords(shared).map((r) => r.keyId)).toEqual([keyOf(shared.dataDir).keyId, keyOf(homeB).keyId]);
      rmSync(barrier, { recursive: true, force: true });
    });
  });
}
