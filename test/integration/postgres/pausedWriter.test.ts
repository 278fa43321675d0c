// A host paused inside a store write transaction does not stop the cluster (host/state/pg/pgDb.ts,
// IDLE_IN_TRANSACTION_MS; the outside attack's F1 of 2026-12-03): a real process takes the writer lock (PG2) in a
// transaction on a throwaway PostgreSQL cluster and is SIGSTOPped there. Another store's write, which waits for that
// lock, goes through once the server ends the paused connection (without that bound it waited as long as the pause:
// every host blocked, its lease ran out, and all of them stopped). The paused process's transaction, continued, fails
// and leaves nothing.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { describe, expect, it, onTestFinished } from 'vitest';
import { IDLE_IN_TRANSACTION_MS } from '../../../host/state/pg/pgDb.js';
import { repoPath } from '../../helpers/fixtures.js';
import { postgresBackend, storesOf } from '../../helpers/storeBackends.js';

/** Whether `pid` is stopped (its /proc state `T`). */
function stopped(pid: number): boolean {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).startsWith('T');
}

describe('a host paused inside a write transaction (PostgreSQL)', () => {
  const { fresh, again } = storesOf(postgresBackend());

  it("loses its connection after the bound: another host's write goes through, the paused one's is gone", async () => {
    const { store, options } = fresh();
    const { sessionId } = store.ensureSession('default', 'b1', 'paused');
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        repoPath('test/fixtures/pausesInTransaction.ts'),
        options.dataDir,
        options.databaseUrl!,
        sessionId,
      ],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    onTestFinished(() => void child.kill('SIGKILL')); // a failed case leaves it stopped, holding this worker
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    expect((await lines.next()).value).toBe('ready');
    child.stdin.end('go\n');
    await expect.poll(() => stopped(child.pid!), { timeout: 10_000 }).toBe(true);

    // The other host's write waits for the writer lock; a lock wait of 10 s fails it instead of hanging this test.
    const waiting = again({ ...options, databaseUrl: `${options.databaseUrl!}%20-clock_timeout%3D10000` });
    const asked = performance.now();
    waiting.append(sessionId, [
      {
        type: 'run.update',
        runId: 'run_other',
        data: { runnerSeq: 1, update: { kind: 'message.delta', text: 'other' } },
      },
    ]);
    const waited = performance.now() - asked;
    expect(waited).toBeGreaterThan(IDLE_IN_TRANSACTION_MS / 2); // it did wait for the paused holder…
    expect(waited).toBeLessThan(10_000); // …and got the lock without the paused host going on

    process.kill(child.pid!, 'SIGCONT');
    const outcome = JSON.parse((await lines.next()).value as string) as { committed: boolean; error?: string };
    expect(outcome.committed).toBe(false);
    const texts = store
      .readEvents(sessionId)
      .filter((e) => e.type === 'run.update')
      .map((e) => (e.data as { update: { text: string } }).update.text);
    expect(texts).toEqual(['other']);
  });
});
