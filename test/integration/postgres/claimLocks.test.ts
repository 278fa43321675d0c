// Claims without the writer lock (stage 2, docs/scale-out.md §3, decision CL14), against both stores: real processes
// race for the same slots, and a host claims while another takes it over. On SQLite a claim is still one writer per
// file; on PostgreSQL it holds only its row and scope locks, and these are the races those locks must win.
import { describe, expect, it } from 'vitest';
import type { ClaimRequest } from '../../../host/state/claims.js';
import { registerHost, type HostLease } from '../../../host/state/hostLeases.js';
import { fenceRunWrites } from '../../../host/state/runFence.js';
import { dbOf, type Store } from '../../../host/state/store.js';
import { storeProcess } from '../../helpers/storeProcess.js';
import { postgresBackend, sqliteBackend, storesOf, type StoreBackend } from '../../helpers/storeBackends.js';

const PROCESSES = 4;

/** Queue one run in each of `count` new sessions of each binding; their claim requests, binding by binding. */
function queueRuns(
  store: Store,
  bindings: string[],
  count: number,
  limits: Omit<ClaimRequest, 'runId' | 'sessionId' | 'bindingId'>,
) {
  const requests: ClaimRequest[] = [];
  for (const bindingId of bindings)
    for (let i = 0; i < count; i++) {
      const sessionId = store.ensureSession('default', bindingId, `c${i}`).sessionId;
      const runId = `run_${bindingId}_${i}`;
      store.append(sessionId, [
        { type: 'run.queued', runId, data: { runner: 'echo', goalRevision: 0, attempt: 1, bindingId } },
      ]);
      requests.push({ runId, sessionId, bindingId, ...limits });
    }
  return requests;
}

/** A host `hostId` (its writes fenced) that queued one run in each of 300 one-slot bindings; their claim requests. */
function hostWithRuns(store: Store, hostId: string) {
  const lease = registerHost(store, { hostId, version: 'test', leaseMs: 600_000 });
  fenceRunWrites(store, lease);
  const bindings = Array.from({ length: 300 }, (_, b) => `b${b}`);
  return { lease, requests: queueRuns(store, bindings, 1, { maxPerBinding: 1, maxTotal: 10_000 }) };
}

/** Start `fixture` once per argument list, then let them all go at once; their printed results. */
async function race(fixture: string, argLists: string[][]): Promise<unknown[]> {
  const processes = await Promise.all(argLists.map((args) => storeProcess(fixture, args)));
  for (const p of processes) p.go();
  return Promise.all(processes.map((p) => p.done));
}

for (const backend of [sqliteBackend(), postgresBackend()] as StoreBackend[]) {
  describe(`claims without the writer lock: ${backend.name}`, () => {
    const { fresh } = storesOf(backend);
    const args = (options: { dataDir: string; databaseUrl?: string }, list: unknown) => [
      options.dataDir,
      options.databaseUrl ?? '',
      JSON.stringify(list),
    ];

    it(`${PROCESSES} processes race for each binding's one slot: never two, one each`, async () => {
      const { store, options } = fresh();
      const bindings = Array.from({ length: 150 }, (_, b) => `b${b}`);
      const requests = queueRuns(store, bindings, PROCESSES, { maxPerBinding: 1, maxTotal: 10_000 });
      // Each process tries its own run of every binding, all in the same binding order: they reach a binding together.
      const mine = (p: number) => requests.filter((r) => r.runId.endsWith(`_${p}`));
      const claimed = (
        (await race(
          'claimsRuns.ts',
          Array.from({ length: PROCESSES }, (_, p) => args(options, mine(p))),
        )) as string[][]
      ).flat();
      for (const b of bindings)
        expect(
          claimed.filter((r) => r.startsWith(`run_${b}_`)),
          b,
        ).toHaveLength(1);
      const rows = dbOf(store).prepare('SELECT run_id FROM run_claims ORDER BY run_id').pluck().all();
      expect(rows).toEqual([...claimed].sort());
    });

    it(`${PROCESSES} processes race for the host's last slots: exactly its bound`, async () => {
      const { store, options } = fresh();
      const bindings = Array.from({ length: 100 }, (_, b) => `b${b}`);
      const requests = queueRuns(store, bindings, PROCESSES, { maxPerBinding: PROCESSES, maxTotal: 120 });
      const mine = (p: number) => requests.filter((r) => r.runId.endsWith(`_${p}`));
      const claimed = (
        (await race(
          'claimsRuns.ts',
          Array.from({ length: PROCESSES }, (_, p) => args(options, mine(p))),
        )) as string[][]
      ).flat();
      expect(claimed).toHaveLength(120);
      expect(dbOf(store).prepare('SELECT count(*) FROM run_claims').pluck().get()).toBe(120);
    });

    it('a host claiming while two others take it over: a run it claimed is interrupted, never re-owned', async () => {
      const { store, options } = fresh();
      const { lease, requests } = hostWithRuns(store, 'hst_claims');
      dbOf(store)
        .prepare('UPDATE hosts SET lease_until = 0 WHERE host_id = ? AND epoch = ?')
        .run(lease.hostId, lease.epoch);
      const claimer = await storeProcess('claimsRuns.ts', [...args(options, requests), JSON.stringify(lease)]);
      const takers = await Promise.all(
        ['1', '2'].map((tag) =>
          storeProcess('takesOverDeadHosts.ts', [options.dataDir, options.databaseUrl ?? '', tag]),
        ),
      );
      claimer.go();
      // The takers go once the claimer has claimed some runs: the takeover lands in the middle of its claims.
      const db = dbOf(store);
      const started = Date.now();
      while ((db.prepare('SELECT count(*) FROM run_claims').pluck().get() as number) < 20) {
        if (Date.now() - started > 30_000) throw new Error('the claimer claimed nothing in 30 s');
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      for (const t of takers) t.go();
      const { claimed, refused } = (await claimer.done) as { claimed: string[]; refused: string | null };
      const reports = (await Promise.all(takers.map((t) => t.done))) as {
        report: { hosts: HostLease[]; interruptedRuns: { runId: string }[]; reownedRuns: string[] };
      }[];
      const winner = reports.filter((r) => r.report.hosts.length > 0);
      expect(winner).toHaveLength(1);
      const { interruptedRuns, reownedRuns } = winner[0]!.report;
      // The race happened: the claimer claimed before the takeover and was refused after it.
      expect(claimed.length).toBeGreaterThanOrEqual(20);
      expect(refused).not.toBeNull();
      // Every run it claimed was interrupted (it may have begun), none re-owned as never started; every other run was
      // re-owned; and no claim is left (the interrupted runs' claims ended with them).
      expect(interruptedRuns.map((r) => r.runId).sort()).toEqual([...claimed].sort());
      expect(reownedRuns.filter((r) => claimed.includes(r))).toEqual([]);
      expect(reownedRuns.length + claimed.length).toBe(requests.length);
      expect(db.prepare('SELECT count(*) FROM run_claims').pluck().get()).toBe(0);
    });
  });
}

describe('balancing: a live host moves queued runs its owner is claiming (postgres)', () => {
  const { fresh } = storesOf(postgresBackend());

  it('a run is claimed by its owner or moved to the other host, never both; no claim of a moved run', async () => {
    const { store, options } = fresh();
    const { lease, requests } = hostWithRuns(store, 'hst_owner');
    const url = options.databaseUrl!;
    const owner = await storeProcess('claimsRuns.ts', [
      options.dataDir,
      url,
      JSON.stringify(requests),
      JSON.stringify(lease),
    ]);
    const movers = await Promise.all(
      ['1', '2'].map((tag) => storeProcess('movesRuns.ts', [options.dataDir, url, tag])),
    );
    owner.go();
    for (const m of movers) m.go();
    const { claimed, refused, movedAway } = (await owner.done) as {
      claimed: string[];
      refused: string | null;
      movedAway: string[];
    };
    const moved = ((await Promise.all(movers.map((m) => m.done))) as string[][]).flat();
    // The race happened: both sides got runs, and the owner found some of its runs moved.
    expect(claimed.length).toBeGreaterThan(0);
    expect(moved.length).toBeGreaterThan(0);
    expect(movedAway.length).toBeGreaterThan(0);
    expect(refused).toBeNull();
    // Each run once: claimed by its owner or moved, never both; together, every run. (A run one mover took may be
    // taken again by the other: a mover claims nothing here, so it never runs what it took.)
    expect(claimed.filter((r) => moved.includes(r))).toEqual([]);
    expect([...new Set([...claimed, ...moved])].sort()).toEqual(requests.map((r) => r.runId).sort());
    // The store agrees: the owner's claims are its runs', and a moved run is unclaimed and owned by its mover.
    const db = dbOf(store);
    const claims = db.prepare('SELECT run_id FROM run_claims ORDER BY run_id').pluck().all();
    expect(claims).toEqual([...claimed].sort());
    const ownedByMovers = db.prepare("SELECT id FROM runs WHERE owner_host LIKE 'hst_mover_%' ORDER BY id").pluck();
    expect(ownedByMovers.all()).toEqual([...new Set(moved)].sort());
  });
});
