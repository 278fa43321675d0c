// Host leases, the fence on a host's writes about its runs, and the takeover of a dead host (docs/scale-out.md §4),
// on both stores: real PostgreSQL (a throwaway cluster) and real SQLite, real processes racing for the takeover.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HostError } from '../../../host/errors.js';
import { tryClaim } from '../../../host/state/claims.js';
import { hostIdOf, hostRows, registerHost, renewLease, type HostLease } from '../../../host/state/hostLeases.js';
import { fenceRunWrites } from '../../../host/state/runFence.js';
import { dbOf, type Store } from '../../../host/state/store.js';
import { storeProcess } from '../../helpers/storeProcess.js';
import { postgresBackend, sqliteBackend, storesOf, type StoreBackend } from '../../helpers/storeBackends.js';

/** The lease of a host that stopped renewing: its lease ran out (planted: no test waits for a clock). */
const expire = (store: Store, lease: HostLease) =>
  dbOf(store)
    .prepare('UPDATE hosts SET lease_until = 0 WHERE host_id = ? AND epoch = ?')
    .run(lease.hostId, lease.epoch);

/** What `fn` threw: its HostError code, or 'none'. */
function refusal(fn: () => unknown): string {
  try {
    fn();
    return 'none';
  } catch (error) {
    return error instanceof HostError ? error.code : String(error);
  }
}

const TAKERS = 4;

for (const backend of [sqliteBackend(), postgresBackend()] as StoreBackend[]) {
  describe(`host leases and takeover: ${backend.name}`, () => {
    const { fresh, again } = storesOf(backend);

    it('a host id is stable per data folder; each start is a new epoch; a lease renews until it ran out', () => {
      const dir = mkdtempSync(join(tmpdir(), 'paddock-hostid-'));
      try {
        const id = hostIdOf(dir);
        expect(id).toMatch(/^hst_[0-9a-f-]{36}$/);
        expect(hostIdOf(dir)).toBe(id);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
      const { store } = fresh();
      const first = registerHost(store, { hostId: 'hst_a', version: 'test' });
      const second = registerHost(store, { hostId: 'hst_a', version: 'test' });
      expect([first.epoch, second.epoch]).toEqual([1, 2]);
      expect(registerHost(store, { hostId: 'hst_b', version: 'test' }).epoch).toBe(1);
      expect(renewLease(store, first)).toBe(true);
      expect(renewLease(store, second, 60_000)).toBe(true);
      // On the database's clock, 60 s from now: the stored lease is later than a 15 s one.
      const until = (lease: HostLease) =>
        hostRows(store).find((h) => h.hostId === lease.hostId && h.epoch === lease.epoch)!.leaseUntil;
      expect(until(second) - until(first)).toBeGreaterThan(30_000);
      expire(store, first);
      // A lease that ran out is not renewed: the host must stop (another host may take its runs over).
      expect(renewLease(store, first)).toBe(false);
      expect(renewLease(store, second)).toBe(true);
    });

    it(`a dead host's runs: ${TAKERS} processes race to take it over, each run interrupted once`, async () => {
      const { store: a, options } = fresh();
      const leaseA = registerHost(a, { hostId: 'hst_a', version: 'test' });
      fenceRunWrites(a, leaseA);
      const queue = (sessionId: string, runId: string) =>
        a.append(sessionId, [
          { type: 'run.queued', runId, data: { runner: 'echo', goalRevision: 0, attempt: 1, bindingId: 'b1' } },
        ]);
      const claim = (store: Store, runId: string, sessionId: string) =>
        tryClaim(store, { runId, sessionId, bindingId: 'b1', maxPerBinding: 10, maxTotal: 100 });
      // s1: r1 running (claimed, started), r2 and r3 queued behind it.
      const s1 = a.ensureSession('default', 'b1', 'c1').sessionId;
      for (const r of ['r1', 'r2', 'r3']) queue(s1, r);
      expect(claim(a, 'r1', s1).ok).toBe(true);
      a.append(s1, [{ type: 'run.started', runId: 'r1', data: { pid: 4242, pidStart: 7 } }]);
      // s2: r4 claimed, not started yet, its workspace being created. s3: r5 queued, never claimed. s4: r6 ended.
      const s2 = a.ensureSession('default', 'b1', 'c2').sessionId;
      queue(s2, 'r4');
      expect(claim(a, 'r4', s2).ok).toBe(true);
      a.append(s2, [
        {
          type: 'effect.intent',
          runId: 'r4',
          data: { effectId: 'eff_1', kind: 'workspace.create', target: 'ws', probe: { path: '/nonexistent/ws' } },
        },
      ]);
      const s3 = a.ensureSession('default', 'b1', 'c3').sessionId;
      queue(s3, 'r5');
      const s4 = a.ensureSession('default', 'b1', 'c4').sessionId;
      queue(s4, 'r6');
      expect(claim(a, 'r6', s4).ok).toBe(true);
      a.append(s4, [
        { type: 'run.started', runId: 'r6', data: { pid: 4243, pidStart: 7 } },
        { type: 'run.ended', runId: 'r6', data: { status: 'completed', reason: 'done', exitCode: 0, signal: null } },
      ]);

      // While A holds its lease, another host writes nothing only an owner writes about A's runs, nor claims them.
      const b = again(options);
      fenceRunWrites(b, registerHost(b, { hostId: 'hst_b', version: 'test', leaseMs: 600_000 }));
      const update = {
        type: 'run.update' as const,
        runId: 'r1',
        data: { runnerSeq: 1, update: { kind: 'progress' as const, message: 'x' } },
      };
      expect(refusal(() => b.append(s1, [update]))).toBe('LEASE_LOST');
      // A claim of a run another host owns claims nothing: it is that host's to start (its verdict names the owner).
      expect(claim(b, 'r5', s3)).toEqual({ ok: false, by: 'moved', owner: { hostId: 'hst_a', epoch: leaseA.epoch } });
      // A itself writes about its runs as long as nobody took it over.
      expect(refusal(() => a.append(s1, [update]))).toBe('none');

      expire(a, leaseA);
      const takers = await Promise.all(
        Array.from({ length: TAKERS }, (_, i) =>
          storeProcess('takesOverDeadHosts.ts', [options.dataDir, options.databaseUrl ?? '', String(i)]),
        ),
      );
      for (const t of takers) t.go();
      const results = (await Promise.all(takers.map((t) => t.done))) as {
        lease: HostLease;
        report: {
          hosts: HostLease[];
          interruptedRuns: { runId: string }[];
          reownedRuns: string[];
          pausedSessions: string[];
        };
      }[];

      // Exactly one taker took A over; the others found nothing left to take.
      const winners = results.filter((r) => r.report.hosts.length > 0);
      expect(winners).toHaveLength(1);
      const winner = winners[0]!;
      expect(winner.report.hosts).toEqual([leaseA]);
      expect(winner.report.interruptedRuns.map((r) => r.runId).sort()).toEqual(['r1', 'r4']);
      expect(winner.report.reownedRuns.sort()).toEqual(['r2', 'r3', 'r5']);
      expect(winner.report.pausedSessions).toEqual([s2]);
      // The log agrees: one run.interrupted per open claimed run, none for the others.
      const db = dbOf(a);
      const interrupted = db
        .prepare("SELECT run_id FROM events WHERE type = 'run.interrupted' ORDER BY run_id")
        .pluck()
        .all();
      expect(interrupted).toEqual(['r1', 'r4']);
      expect(a.run('r6')).toMatchObject({ status: 'completed' });
      // Claims released; the workspace on A's disk could not be probed from another host: unknown, s2 paused.
      expect(db.prepare('SELECT run_id FROM run_claims').pluck().all()).toEqual([]);
      const reconciled = a.readEvents(s2).filter((e) => e.type === 'effect.reconciled');
      expect(reconciled.map((e) => e.data)).toEqual([
        { effectId: 'eff_1', status: 'unknown', how: expect.stringContaining('hst_a') as unknown },
      ]);
      expect(a.pausedReason(s2)).toMatch(/host hst_a died/);
      expect(a.pausedReason(s1)).toBeNull();
      // The queued runs that never started carry on under the winner: the next of each session is claimable by it.
      const owners = db
        .prepare(
          "SELECT id, owner_host AS host, owner_epoch AS epoch FROM runs WHERE id IN ('r2', 'r3', 'r5') ORDER BY id",
        )
        .all();
      expect(owners).toEqual(
        ['r2', 'r3', 'r5'].map((id) => ({ id, host: winner.lease.hostId, epoch: winner.lease.epoch })),
      );
      // A, back from its pause: it cannot renew, append to or end its runs, nor claim the ones it lost.
      const before = db.prepare('SELECT count(*) FROM events').pluck().get();
      expect(renewLease(a, leaseA)).toBe(false);
      expect(refusal(() => a.append(s1, [update]))).toBe('LEASE_LOST');
      expect(
        refusal(() =>
          a.append(s2, [
            {
              type: 'run.ended',
              runId: 'r4',
              data: { status: 'completed', reason: 'late', exitCode: 0, signal: null },
            },
          ]),
        ),
      ).toBe('LEASE_LOST');
      expect(refusal(() => claim(a, 'r2', s1))).toBe('LEASE_LOST');
      expect(db.prepare('SELECT count(*) FROM events').pluck().get()).toBe(before);
      expect(a.run('r4')).toMatchObject({ status: 'interrupted' });
      const w = again(options);
      fenceRunWrites(w, winner.lease);
      expect(claim(w, 'r5', s3).ok).toBe(true);
      expect(claim(w, 'r2', s1).ok).toBe(true);
      expect(claim(w, 'r3', s1)).toMatchObject({ ok: false, by: 'session' });
      expect(hostRows(a).find((h) => h.hostId === 'hst_a')).toMatchObject({
        deadAt: expect.any(String) as unknown,
        takenOverBy: `${winner.lease.hostId}/${winner.lease.epoch}`,
      });
    });
  });
}
