// Audit verify (issue 16): the verifier against what it cannot beat (reading the rows, SHA-256 of their bytes) and
// against the verifier issue 16 started from (its code at that revision), on one log, rounds interleaved.
import { createHash, createPublicKey, hash, type KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { auditKeyPaths } from '../host/audit/auditKey.js';
import { verifyAudit } from '../host/audit/verify.js';
import { auditTable } from '../host/state/auditTable.js';
import { openDatabaseReadOnly } from '../host/state/db.js';
import { Store } from '../host/state/store.js';
import { importAtRevision, ISSUE_16_START } from './beforeRevision.js';
import { fmt, summarize } from './stats.js';

/** What the "before" verifier needs of its revision: host/audit/ and the storage it read. */
const BEFORE_FILES = ['host/audit', 'host/state/auditTable.ts'];

const RECORDS = 300_000;
const ROUNDS = 5;

/** Records verified per second, before and after, with the read and SHA-256 baselines of the same rows. */
export async function auditVerifyBench(): Promise<Record<string, unknown>> {
  console.log(`\n## Audit verify (issue 16): ${RECORDS} records, ${ROUNDS} rounds interleaved, medians`);
  const dataDir = mkdtempSync(join(tmpdir(), 'paddock-bench-audit-'));
  const store = Store.open({ dataDir });
  for (let b = 0; b < RECORDS / 1000; b++)
    store.transaction(() => {
      for (let i = 0; i < 1000; i++)
        store.audit.append({
          type: 'run.spawned',
          actor: 'host',
          sessionId: `ses_${b}`,
          runId: `run_${b}_${i % 10}`,
          data: { b, i, argv: ['node', 'runner.mjs'], cwd: '/work/ws', limits: { wallMs: 600_000 } },
        });
    });
  store.close();
  // Before: host/audit/ and its storage as of the revision issue 16 started from (bench/beforeRevision.ts).
  type Verify = (storage: unknown, key: KeyObject) => { ok: boolean; records?: number };
  const [{ verifyAudit: verifyBefore }, { auditTable: tableBefore }] = await Promise.all([
    importAtRevision<{ verifyAudit: Verify }>(ISSUE_16_START, BEFORE_FILES, 'host/audit/verify.ts'),
    importAtRevision<{ auditTable: (db: unknown) => unknown }>(
      ISSUE_16_START,
      BEFORE_FILES,
      'host/state/auditTable.ts',
    ),
  ]);
  const db = openDatabaseReadOnly(join(dataDir, 'paddock.db'));
  const key = createPublicKey(readFileSync(auditKeyPaths(dataDir).publicPath));
  const bodies = (db.prepare('SELECT data FROM audit ORDER BY rowid').pluck().all() as string[]).map(
    (d) => `paddock-audit-v1\0{"actor":"host","at":"2026-12-02T00:00:00.000Z","data":${d},"prev":"${'0'.repeat(64)}"}`,
  );
  const rate = (f: () => number) => {
    const t = performance.now();
    const n = f();
    return n / ((performance.now() - t) / 1000);
  };
  const samples: Record<string, number[]> = { before: [], after: [], read: [], createHash: [], oneShot: [] };
  for (let round = 0; round < ROUNDS; round++) {
    samples.before!.push(
      rate(() => {
        const verdict = verifyBefore(tableBefore(db), key);
        if (!verdict.ok) throw new Error(`the log did not verify before: ${JSON.stringify(verdict)}`);
        return verdict.records!;
      }),
    );
    samples.after!.push(
      rate(() => {
        const verdict = verifyAudit(auditTable(db), key);
        if (!verdict.ok) throw new Error(`the log did not verify: ${JSON.stringify(verdict)}`);
        return verdict.records;
      }),
    );
    samples.read!.push(
      rate(() => {
        let n = 0;
        for (const page of auditTable(db).pagesToVerify()) n += page.length;
        return n;
      }),
    );
    samples.createHash!.push(
      rate(() => {
        for (const body of bodies) createHash('sha256').update(body).digest('hex');
        return bodies.length;
      }),
    );
    samples.oneShot!.push(
      rate(() => {
        for (const body of bodies) hash('sha256', body);
        return bodies.length;
      }),
    );
  }
  db.close();
  rmSync(dataDir, { recursive: true, force: true });
  const median = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, summarize(v).median]));
  const k = (n: number) => `${fmt(n / 1000)}k records/s`;
  console.log(`verify, before (issue 16's start):      ${k(median.before!)}`);
  console.log(
    `verify, now:                            ${k(median.after!)}  (${fmt(median.after! / median.before!)}× before)`,
  );
  console.log(`read the rows alone (pages, raw):       ${k(median.read!)}`);
  console.log(
    `SHA-256 alone, createHash per record:   ${k(median.createHash!)}  (verify now = ` +
      `${fmt(median.after! / median.createHash!, 2)}× of it)`,
  );
  console.log(`SHA-256 alone, crypto.hash per record:  ${k(median.oneShot!)}`);
  return { records: RECORDS, rounds: ROUNDS, medians: median, samples };
}
