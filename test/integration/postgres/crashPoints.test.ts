// Crash points on both stores (issue 17: "the crash-point tests on both"): a real process appending to a session
// SIGKILLs itself right after its N-th committed event, or inside a transaction before its COMMIT. Afterwards, on the
// SQLite file and on PostgreSQL alike: every committed transaction is whole (its events and their audit records), the
// killed one left nothing, the seqs have no gap, the listener heard only committed events, the next append takes the
// next seq (PostgreSQL released the dead connection's writer lock), and the audit chain verifies.
import { spawn } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { verifyAudit } from '../../../host/audit/verify.js';
import { auditTable } from '../../../host/state/auditTable.js';
import { dbOf, type Store } from '../../../host/state/store.js';
import type { StoredEvent } from '../../../host/state/events.js';
import { repoPath } from '../../helpers/fixtures.js';
import { postgresBackend, sqliteBackend, type StoreBackend } from '../../helpers/storeBackends.js';

/** Run the fixture to its crash point: the seqs its listener heard, and how it ended. */
async function crashAt(options: { dataDir: string; databaseUrl?: string }, sessionId: string, point: string) {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      repoPath('test/fixtures/crashesAppending.ts'),
      options.dataDir,
      options.databaseUrl ?? '',
      sessionId,
      point,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const signal = await new Promise<NodeJS.Signals | null>((resolve) =>
    child.once('close', (_code, sig) => resolve(sig)),
  );
  expect(signal, stderr).toBe('SIGKILL');
  return stdout.split('\n').filter(Boolean).map(Number);
}

for (const backend of [sqliteBackend(), postgresBackend()] as StoreBackend[]) {
  describe(`crash points: ${backend.name}`, () => {
    afterAll(() => backend.close());

    // event:N — killed after the N-th committed event (the hook runs after its listeners); every transaction holds 3.
    // mid:N — killed inside the N-th transaction: the N - 1 before it committed.
    for (const [point, committedTransactions, heard] of [
      ['event:1', 1, 1],
      ['event:5', 2, 5],
      ['mid:1', 0, 0],
      ['mid:4', 3, 9],
    ] as const) {
      it(`${point}: ${committedTransactions} whole transactions stay, nothing of the killed one`, async () => {
        const options = backend.fresh();
        const store: Store = backend.open(options);
        const { sessionId } = store.ensureSession('default', 'b1', 'c1');
        const auditBefore = dbOf(store).prepare('SELECT count(*) FROM audit').pluck().get() as number;
        const heardSeqs = await crashAt(options, sessionId, point);
        const events = store.readEvents(sessionId);
        const committed = committedTransactions * 3;
        // session.created is seq 1; the committed updates follow, numbered 1..committed, gap-free.
        expect(events.map((e) => e.seq)).toEqual(Array.from({ length: committed + 1 }, (_, i) => i + 1));
        expect(events.slice(1).map((e) => (e as StoredEvent<'run.update'>).data.runnerSeq)).toEqual(
          Array.from({ length: committed }, (_, i) => i + 1),
        );
        // The listener heard committed events only, in order (the hook kills after the N-th one's listeners).
        expect(heardSeqs).toEqual(Array.from({ length: heard }, (_, i) => i + 2));
        // Each committed event's audit record committed with it, and no other.
        const audited = dbOf(store)
          .prepare("SELECT data FROM audit WHERE type = 'test.appended' ORDER BY seq")
          .pluck()
          .all() as string[];
        expect(audited.map((d) => (JSON.parse(d) as { n: number }).n)).toEqual(
          Array.from({ length: committed }, (_, i) => i + 1),
        );
        const auditAfter = dbOf(store).prepare('SELECT count(*) FROM audit').pluck().get() as number;
        // The fixture's store open added nothing to the audit (no new key, no migration); its close never ran.
        expect(auditAfter).toBe(auditBefore + committed);
        // The next writer gets the writer lock and the next seq.
        const next = store.append(sessionId, [
          {
            type: 'run.update',
            runId: 'run_next',
            data: { runnerSeq: 1, update: { kind: 'message.delta', text: 'n' } },
          },
        ]);
        expect(next[0]!.seq).toBe(committed + 2);
        expect(verifyAudit(auditTable(dbOf(store)), store.key.publicKey)).toMatchObject({ ok: true });
      });
    }
  });
}
