// Claims across hosts (docs/scale-out.md §4, "Claims"; decision CL3): three real processes, each a host with its own
// lease, queue runs into the same 100 conversations at once and run them, claiming with `tryClaim` under the store's
// writer lock, on both stores. The log, in the audit chain's commit order, must show no conversation with two active
// runs, no binding over its limit, runs of a conversation started in queue order, and each run started once. A host's
// own `maxConcurrentRuns` bounds its runs only: a machine's capacity, while the binding's limit is the cluster's.
import { afterAll, describe, expect, it } from 'vitest';
import type { Store } from '../../../host/state/store.js';
import { storeProcess } from '../../helpers/storeProcess.js';
import { postgresBackend, sqliteBackend, type StoreBackend } from '../../helpers/storeBackends.js';

const HOSTS = 3;
const CONVERSATIONS = 100;
/** Each binding (`bl0` … `bl9`) serves ten conversations, each with one run from every host: 30 runs, 3 slots. */
const LIMIT = 3;
/** Each host's own `maxConcurrentRuns` in the second case (binding limits out of the way). */
const HOST_LIMIT = 2;

for (const backend of [sqliteBackend(), postgresBackend()] as StoreBackend[]) {
  describe(`claims across hosts: ${backend.name}`, () => {
    const open: Store[] = [];
    afterAll(() => {
      for (const s of open) if (!s.isClosed) s.close();
      backend.close();
    });

    /** Three real host processes queue and run their runs; the claims replayed in commit order. */
    async function race(limit: number, hostLimit?: number, conversations = CONVERSATIONS) {
      const options = backend.fresh();
      const store = backend.open(options);
      open.push(store);
      const hosts = await Promise.all(
        Array.from({ length: HOSTS }, (_, i) =>
          storeProcess('claimsQueuedRuns.ts', [
            options.dataDir,
            options.databaseUrl ?? '',
            `h${i}`,
            String(conversations),
            String(limit),
            ...(hostLimit === undefined ? [] : [String(hostLimit)]),
          ]),
        ),
      );
      for (const h of hosts) h.go();
      const figures = (await Promise.all(hosts.map((h) => h.done))) as { runs: number; attempts: number; ms: number }[];
      console.log(`${backend.name}: ${HOSTS} hosts, ${HOSTS * conversations} runs`, JSON.stringify(figures));

      const runs = new Map(store.runs({ limit: 10_000 }).map((r) => [r.id, r]));
      expect(runs.size).toBe(HOSTS * conversations);
      // Every run started once and ended once.
      const records = store.audit.records({ types: ['test.run_started', 'test.run_ended'] });
      const starts = records.filter((r) => r.type === 'test.run_started').map((r) => r.runId!);
      expect(starts.sort()).toEqual([...runs.keys()].sort());
      expect(new Set(starts).size).toBe(starts.length);
      expect([...runs.values()].every((r) => r.status === 'completed')).toBe(true);

      // Replayed in commit order (the audit chain's seq: one writer at a time on both stores).
      const active = { session: new Map<string, number>(), binding: new Map<string, number>() };
      const onHost = new Map<string, number>();
      const busiest = { binding: 0, host: 0, cluster: 0 };
      let inCluster = 0;
      const startedOrder = new Map<string, number[]>();
      const bump = (map: Map<string, number>, key: string, step: number) => {
        map.set(key, (map.get(key) ?? 0) + step);
        return map.get(key)!;
      };
      for (const record of records) {
        const run = runs.get(record.runId!)!;
        const step = record.type === 'test.run_started' ? 1 : -1;
        expect(bump(active.session, run.sessionId, step), `conversation of ${run.id}`).toBeLessThanOrEqual(1);
        const inBinding = bump(active.binding, run.bindingId!, step);
        expect(inBinding, `binding ${run.bindingId}`).toBeLessThanOrEqual(limit);
        const inHost = bump(onHost, run.ownerHost!, step);
        if (hostLimit !== undefined) expect(inHost, `host ${run.ownerHost}`).toBeLessThanOrEqual(hostLimit);
        inCluster += step;
        busiest.binding = Math.max(busiest.binding, inBinding);
        busiest.host = Math.max(busiest.host, inHost);
        busiest.cluster = Math.max(busiest.cluster, inCluster);
        if (step === 1)
          startedOrder.set(run.sessionId, [...(startedOrder.get(run.sessionId) ?? []), queuedSeq(run.id)]);
      }
      // A conversation's runs started in the order they were queued, whichever host queued them.
      for (const [sessionId, seqs] of startedOrder) expect(seqs, sessionId).toEqual([...seqs].sort((x, y) => x - y));
      // Every conversation got a run from each host: the hosts really raced inside conversations (with a host bound,
      // each host has conversations of its own; see the fixture).
      const runsPerConversation = hostLimit === undefined ? HOSTS : 1;
      expect([...startedOrder.values()].every((seqs) => seqs.length === runsPerConversation)).toBe(true);
      return busiest;

      function queuedSeq(runId: string): number {
        const event = store
          .readEvents(runs.get(runId)!.sessionId)
          .find((e) => e.runId === runId && e.type === 'run.queued');
        return event!.seq;
      }
    }

    it(`${HOSTS} hosts claim from ${CONVERSATIONS} conversations: one active run each, limits hold`, async () => {
      const busiest = await race(LIMIT);
      // The limit was really contended (otherwise the test proved nothing about it).
      expect(busiest.binding).toBe(LIMIT);
    });

    it("a host's maxConcurrentRuns bounds its own runs, not the cluster's", async () => {
      const busiest = await race(1_000, HOST_LIMIT, 30);
      // Each host reached its own bound, and together they ran more than one host may: the bound is per host. (Each
      // host holds its first full batch until another host's run is active, bounded, so a cluster-wide bound fails.)
      expect(busiest.host).toBe(HOST_LIMIT);
      expect(busiest.cluster).toBeGreaterThan(HOST_LIMIT);
    });
  });
}
