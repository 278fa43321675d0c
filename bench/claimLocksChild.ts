// A child process of bench/claimLocks.ts: `claim` claims its runs one by one (as the host with the lease it is given)
// and prints each claim's milliseconds; `append` appends one event per transaction to a session of its own until told
// to stop, and prints how many. Both print "ready", start on the first stdin line; `append` stops on the second.
import { createInterface } from 'node:readline';
import { tryClaim, type ClaimRequest } from '../host/state/claims.js';
import type { HostLease } from '../host/state/hostLeases.js';
import { fenceRunWrites } from '../host/state/runFence.js';
import { Store } from '../host/state/store.js';

const [mode, dataDir, databaseUrl, arg, lockMode] = process.argv.slice(2) as [string, string, string, string, string];
const store = Store.open({ dataDir, databaseUrl });
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
process.stdout.write('ready\n');
await lines.next();
if (mode === 'claim') {
  const { lease, requests } = JSON.parse(arg) as { lease: HostLease; requests: ClaimRequest[] };
  fenceRunWrites(store, lease);
  const ms: number[] = [];
  for (const req of requests) {
    const t = performance.now();
    // `writer`: the claim inside a writer-locked transaction (stage 1: its own transaction becomes a savepoint).
    const verdict = lockMode === 'writer' ? store.transaction(() => tryClaim(store, req)) : tryClaim(store, req);
    ms.push(performance.now() - t);
    if (!verdict.ok) throw new Error(`run ${req.runId} was not claimed: ${verdict.by}`);
  }
  process.stdout.write(`${JSON.stringify(ms)}\n`);
} else {
  const sessionId = store.ensureSession('default', 'bench-append', arg).sessionId;
  let stop = false;
  void lines.next().then(() => (stop = true));
  let n = 0;
  while (!stop) {
    // A few appends, then a loop turn (the stop line is read between them).
    for (let i = 0; i < 20; i++, n++)
      store.append(sessionId, [
        {
          type: 'run.update',
          runId: 'run_x',
          data: { runnerSeq: n + 1, update: { kind: 'message.delta', text: 'x' } },
        },
      ]);
    await new Promise((resolve) => setImmediate(resolve));
  }
  process.stdout.write(`${JSON.stringify(n)}\n`);
}
store.close();
