// Claims across hosts (docs/scale-out.md §4, "Claims"; decision CL3): three real processes, each a host with its own
// lease, queue runs into the same 100 conversations at once and run them, claiming with `tryClaim` under the store's
// writer lock, on both stores. The log, in the audit chain's commit order, must show no conversation with two active
// runs, no binding over its limit, runs of a conversation started in queue order, and each run started once.
import { afterAll, describe, expect, it } from 'vitest';
import type { Store } from '../../../host/state/store.js';
import { storeProcess } from '../../helpers/storeProcess.js';
import { postgresBackend, sqliteBackend, type StoreBackend } from '../../helpers/storeBackends.js';

const HOSTS = 3;
const CONVERSATIONS = 100;
/** Each binding (`bl0` … `bl9`) serves ten conversations, each with one run from every host: 30 runs, 3 slots. */
const LIMIT = 3;

for (const backend of [sqliteBackend(), postgresBackend()] as StoreBackend[]) {
  describe(`claims across hosts: ${backend.name}`, () => {
    const open: Store[] = [];
    afterAll(() => {
      for (const s of open) if (!s.isClosed) s.close();
      backend.close();
    });

    it(`${HOSTS} hosts claim from ${CONVERSATIONS} conversations: one active run each, limits hold`, async () => {
      const options = backend.fresh();
      const store = backend.open(options);
      open.push(store);
      const hosts = await Promise.all(
        Array.from({ length: HOSTS }, (_, i) =>
          storeProcess('claimsQueuedRuns.ts', [
            options.dataDir,
            options.databaseUrl ?? '',
            `h${i}`,
            String(CONVERSATIONS),
            String(LIMIT),
          ]),
        ),
      );
      for (const h of hosts) h.go();
      const figures = (await Promise.all(hosts.map((h) => h.done))) as { runs: number; attempts: number; ms: number }[];
      console.log(`${backend.name}: ${HOSTS} hosts, ${HOSTS * CONVERSATIONS} runs`, JSON.stringify(figures));

      const runs = new Map(store.runs({ limit: 10_000 }).map((r) => [r.id, r]));
      expect(runs.size).toBe(HOSTS * CONVERSATIONS);
      // Every run started once and ended once.
      const records = store.audit.records({ types: ['test.run_started', 'test.run_ended'] });
      const starts = records.filter((r) => r.type === 'test.run_started').map((r) => r.runId!);
      expect(starts.sort()).toEqual([...runs.keys()].sort());
      expect(new Set(starts).size).toBe(starts.length);
      expect([...runs.values()].every((r) => r.status === 'completed')).toBe(true);

      // Replayed in commit order (the audit chain's seq: one writer at a time on both stores).
      const activeBySession = new Map<string, number>();
      const activeByBinding = new Map<string, number>();
      let busiest = 0;
      const startedOrder = new Map<string, number[]>();
      for (const record of records) {
        const run = runs.get(record.runId!)!;
        const step = record.type === 'test.run_started' ? 1 : -1;
        const inSession = (activeBySession.get(run.sessionId) ?? 0) + step;
        const inBinding = (activeByBinding.get(run.bindingId!) ?? 0) + step;
        activeBySession.set(run.sessionId, inSession);
        activeByBinding.set(run.bindingId!, inBinding);
        expect(inSession, `conversation of ${run.id}`).toBeLessThanOrEqual(1);
        expect(inBinding, `binding ${run.bindingId}`).toBeLessThanOrEqual(LIMIT);
        busiest = Math.max(busiest, inBinding);
        if (step === 1)
          startedOrder.set(run.sessionId, [...(startedOrder.get(run.sessionId) ?? []), queuedSeq(run.id)]);
      }
      // The limit was really contended (otherwise the test proved nothing about it).
      expect(busiest).toBe(LIMIT);
      // A conversation's runs started in the order they were queued, whichever host queued them.
      for (const [sessionId, seqs] of startedOrder) expect(seqs, sessionId).toEqual([...seqs].sort((x, y) => x - y));
      // Every conversation got a run from each host: the hosts really raced inside conversations.
      expect([...startedOrder.values()].every((seqs) => seqs.length === HOSTS)).toBe(true);

      function queuedSeq(runId: string): number {
        const event = store
          .readEvents(runs.get(runId)!.sessionId)
          .find((e) => e.runId === runId && e.type === 'run.queued');
        return event!.seq;
      }
    });
  });
}
