// Whose run is dead is judged where it can be (docs/scale-out.md §4, "Judged by the lease"): on PostgreSQL a run of
// another host — another machine, whose pids mean nothing here — is judged by its lease only, never by its pid, and
// freed by a takeover once the lease ran out; a run of this data folder's own host is judged by pid as before. Real
// PostgreSQL (a throwaway cluster), two data folders on one database as two hosts.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { reclaimDeadOwners, reconcile } from '../../../host/recovery/reconcile.js';
import { BindingLimitsSchema } from '../../../host/bindings/schema.js';
import { reserve } from '../../../host/gateway/modelBudget.js';
import type { GatewayRun } from '../../../host/gateway/runContext.js';
import { insertReservation, reservedSpend } from '../../../host/state/gatewayCalls.js';
import { claimBlocker, ownerIsLocal, tryClaim } from '../../../host/state/claims.js';
import {
  hostIdOf,
  hostRows,
  registerHost,
  releaseLease,
  renewLease,
  type HostLease,
} from '../../../host/state/hostLeases.js';
import { onTakeovers, takeOverDeadHosts, type TakeoverReport } from '../../../host/recovery/deadHosts.js';
import { fenceRunWrites } from '../../../host/state/runFence.js';
import { dbOf, type Store } from '../../../host/state/store.js';
import { processStartTime } from '../../../host/util/procIdentity.js';
import { postgresBackend, postgresUrlOf, sqliteBackend, storesOf } from '../../helpers/storeBackends.js';

/** A pid no process has (above the kernel's pid_max default of 4,194,304). */
const DEAD_PID = 4_999_999;

const expire = (store: Store, lease: HostLease) =>
  dbOf(store)
    .prepare('UPDATE hosts SET lease_until = 0 WHERE host_id = ? AND epoch = ?')
    .run(lease.hostId, lease.epoch);

/** Queue `runId` in `sessionId` as host process `host` would (its `run.queued` names the process): a dead one. */
const queue = (store: Store, sessionId: string, runId: string, host = { pid: DEAD_PID, start: 1 }) =>
  store.append(sessionId, [
    { type: 'run.queued', runId, data: { runner: 'echo', goalRevision: 0, attempt: 1, bindingId: 'b1', host } },
  ]);
/** This test process, as a live host process. */
const LIVE = { pid: process.pid, start: processStartTime(process.pid)! };
const claim = (store: Store, runId: string, sessionId: string) =>
  tryClaim(store, { runId, sessionId, bindingId: 'b1', maxPerBinding: 10, maxTotal: 100 });
/** The claim of `runId` as a process that died would hold it: no live process has its pid. */
const orphanClaim = (store: Store, runId: string) =>
  dbOf(store).prepare('UPDATE run_claims SET host_pid = ?, host_start = 1 WHERE run_id = ?').run(DEAD_PID, runId);

const dirs: string[] = [];
const folder = () => {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-lease-judge-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('run owners judged by the lease on PostgreSQL', () => {
  const { fresh, again } = storesOf(postgresBackend());

  /** A new store with a host holding a lease on it, and run r1 queued in session s1 by a process that is gone. */
  const leasedHostWithRun = () => {
    const { store, options } = fresh();
    const lease = registerHost(store, { hostId: hostIdOf(options.dataDir), version: 'test' });
    fenceRunWrites(store, lease);
    const s1 = store.ensureSession('default', 'b1', 'c1').sessionId;
    queue(store, s1, 'r1');
    return { store, options, lease, s1 };
  };

  it("another host's run with a dead pid is left alone while its lease holds, and taken over once after", async () => {
    const { store: far, options, lease: farLease, s1 } = leasedHostWithRun();
    expect(claim(far, 'r1', s1).ok).toBe(true);
    far.append(s1, [{ type: 'run.started', runId: 'r1', data: { pid: DEAD_PID, pidStart: 1 } }]);
    orphanClaim(far, 'r1');

    // Another host, on its own data folder: every pid of the far host's looks dead from here.
    const near = again({ dataDir: folder(), databaseUrl: options.databaseUrl });
    expect(ownerIsLocal(near, far.run('r1')!)).toBe(false);
    expect(ownerIsLocal(far, far.run('r1')!)).toBe(true);
    const nearLease = registerHost(near, { hostId: hostIdOf(near.dataDir), version: 'test' });
    fenceRunWrites(near, nearLease);
    queue(near, s1, 'r2', LIVE);
    const blocker = () =>
      claimBlocker(near, { sessionId: s1, bindingId: 'b1', maxPerBinding: 10, maxTotal: 100, queuedSeq: 99 });

    // While the far host's lease holds: start-up recovery leaves its run, and what blocks is not dead.
    expect((await reconcile(near)).interruptedRuns).toEqual([]);
    expect(far.run('r1')).toMatchObject({ status: 'running' });
    expect(blocker()).toEqual({ by: 'session', deadOwners: false });
    expect((await reclaimDeadOwners(near)).interruptedRuns).toEqual([]);

    // Its lease ran out: what blocks is dead now; recovery by pid still leaves it; the takeover frees it, once.
    expire(far, farLease);
    expect(blocker()).toEqual({ by: 'session', deadOwners: true });
    expect((await reconcile(near)).interruptedRuns).toEqual([]);
    const reclaimed = await reclaimDeadOwners(near);
    expect(reclaimed.interruptedRuns).toEqual([{ runId: 'r1', sessionId: s1, killedPid: null }]);
    expect((await reclaimDeadOwners(near)).interruptedRuns).toEqual([]);
    const ended = near.readEvents(s1).filter((e) => e.type === 'run.interrupted');
    expect(ended.map((e) => [e.runId, (e.data as { reason: string }).reason])).toEqual([
      ['r1', `host ${farLease.hostId} (epoch ${farLease.epoch}) stopped renewing its lease during the run`],
    ]);
    // The session's queue carries on, on the near host.
    expect(claim(near, 'r2', s1).ok).toBe(true);
  });

  it("a model call in flight for another host's run holds its budget while that host's lease does", () => {
    const { store: far, options, lease: farLease, s1 } = leasedHostWithRun();
    insertReservation(far, {
      id: 'held-far',
      runId: 'r1',
      bindingId: 'b1',
      tokens: 90,
      costUsd: 0,
      atMs: Date.now(),
      owner: { pid: DEAD_PID, start: 1 },
    });
    const near = again({ dataDir: folder(), databaseUrl: options.databaseUrl });
    const call = (tokens: number) =>
      reserve(
        near,
        {
          claims: { runId: 'r1', sessionId: s1, bindingId: 'b1', runnerId: 'echo' },
          budget: BindingLimitsSchema.parse({ modelTokensPerRun: 100 }),
        } as unknown as GatewayRun,
        { inputTokens: tokens - 1, outputTokens: 1, tokens, costUsd: 0 },
      );
    // The far host's call is counted (a pid of another machine says nothing): 90 + 20 > 100.
    expect(call(20)).toMatchObject({ deniedBy: 'binding.limits.modelTokensPerRun' });
    expect(reservedSpend(near, { runId: 'r1' }).tokens).toBe(90);
    // Once its lease ran out, its calls are over: dropped by the next check.
    expire(far, farLease);
    expect(call(20)).toMatchObject({ id: expect.any(String) as unknown });
    expect(reservedSpend(near, { runId: 'r1' }).tokens).toBe(20);
  });

  it('a clean stop gives the lease up only when the host owns no open run; a given-up host is never taken over', () => {
    const { store, lease, s1 } = leasedHostWithRun();
    expect(releaseLease(store, lease)).toBe(false); // r1 is still queued: it stays for a takeover
    expect(hostRows(store).find((h) => h.epoch === lease.epoch)).toMatchObject({ deadAt: null });
    store.append(s1, [
      { type: 'run.ended', runId: 'r1', data: { status: 'cancelled', reason: 'stop', exitCode: null, signal: null } },
    ]);
    expect(releaseLease(store, lease)).toBe(true);
    expect(releaseLease(store, lease)).toBe(false); // once
    expect(hostRows(store).find((h) => h.epoch === lease.epoch)).toMatchObject({
      deadAt: expect.any(String) as unknown,
      takenOverBy: `${lease.hostId}/${lease.epoch}`,
    });
    expect(renewLease(store, lease)).toBe(false);
    const taker = again({ dataDir: folder(), databaseUrl: postgresUrlOf(store) });
    const takerLease = registerHost(taker, { hostId: hostIdOf(taker.dataDir), version: 'test' });
    fenceRunWrites(taker, takerLease);
    expire(store, lease);
    expect(takeOverDeadHosts(taker, takerLease).hosts).toEqual([]);
  });

  it("this folder's own host's run (an earlier start of it) is still judged by its pid", async () => {
    const { store: before, options, s1 } = leasedHostWithRun();
    expect(claim(before, 'r1', s1).ok).toBe(true);
    orphanClaim(before, 'r1');
    // The same folder started again (a new epoch): its lease of before still holds, its process is gone.
    const now = again(options);
    fenceRunWrites(now, registerHost(now, { hostId: hostIdOf(options.dataDir), version: 'test' }));
    expect(ownerIsLocal(now, now.run('r1')!)).toBe(true);
    const report = await reconcile(now);
    expect(report.interruptedRuns.map((r) => r.runId)).toEqual(['r1']);
    expect(now.run('r1')).toMatchObject({ status: 'interrupted' });
  });

  it("an earlier start's never-started queued run is handed on by a takeover, not interrupted at restart", async () => {
    const { store: before, options, lease: beforeLease, s1 } = leasedHostWithRun();
    queue(before, s1, 'r2');
    expect(claim(before, 'r1', s1).ok).toBe(true);
    orphanClaim(before, 'r1');
    const now = again(options);
    const nowLease = registerHost(now, { hostId: hostIdOf(options.dataDir), version: 'test' });
    fenceRunWrites(now, nowLease);
    // Restart: the claimed run (it may have begun) is interrupted; r2, never claimed, did no work and waits.
    expect((await reconcile(now)).interruptedRuns.map((r) => r.runId)).toEqual(['r1']);
    expect(now.run('r2')).toMatchObject({ status: 'queued', ownerEpoch: beforeLease.epoch });
    // Its start's lease runs out: the takeover (here this host's own) re-owns r2, which then claims and runs.
    expire(before, beforeLease);
    expect(takeOverDeadHosts(now, nowLease).reownedRuns).toEqual(['r2']);
    expect(now.run('r2')).toMatchObject({ status: 'queued', ownerEpoch: nowLease.epoch });
    expect(claim(now, 'r2', s1).ok).toBe(true);
  });

  it("a queued run a takeover re-owned while a restart's recovery ran is not interrupted by it", async () => {
    const { store: before, options, lease: beforeLease, s1 } = leasedHostWithRun();
    const s2 = before.ensureSession('default', 'b1', 'c2').sessionId;
    queue(before, s2, 'r0'); // listed before r1 (newer; the same instant sorts by id)
    expect(claim(before, 'r0', s2).ok).toBe(true);
    orphanClaim(before, 'r0');
    const other = again({ dataDir: folder(), databaseUrl: options.databaseUrl });
    const otherLease = registerHost(other, { hostId: hostIdOf(other.dataDir), version: 'test' });
    fenceRunWrites(other, otherLease);
    // While the restarted start's recovery is past r0 (it takes seconds to kill a run's leftovers) and has r1 still to
    // judge as listed: the earlier start's lease runs out, another host takes it over, re-owns r1, and claims it.
    let interleaved = false;
    const hooks = {
      afterEventCommitted: (event: { type: string; sessionId: string }) => {
        if (interleaved || event.type !== 'run.interrupted' || event.sessionId !== s2) return;
        interleaved = true;
        expire(other, beforeLease);
        expect(takeOverDeadHosts(other, otherLease).reownedRuns).toEqual(['r1']);
        expect(claim(other, 'r1', s1).ok).toBe(true);
      },
    };
    const now = again({ ...options, hooks });
    fenceRunWrites(now, registerHost(now, { hostId: hostIdOf(options.dataDir), version: 'test' }));
    const report = await reconcile(now);
    expect(interleaved).toBe(true);
    // r1 is the other host's now, claimed and about to start there: this recovery leaves it (it once interrupted it,
    // and the other host then ran it to its end: two ends).
    expect(report.interruptedRuns.map((r) => r.runId)).toEqual(['r0']);
    expect(now.run('r1')).toMatchObject({ status: 'queued', ownerHost: otherLease.hostId });
  });

  it('a host back on its folder decides the effects a takeover left unknown, and resumes the session', async () => {
    const { store: far, options, lease: farLease, s1 } = leasedHostWithRun();
    expect(claim(far, 'r1', s1).ok).toBe(true);
    const made = join(options.dataDir, 'workspaces', 'r1'); // the workspace the run created on the far host's disk
    mkdirSync(made, { recursive: true });
    const missing = join(options.dataDir, 'workspaces', 'never-made');
    const intent = (effectId: string, path: string) => ({
      type: 'effect.intent' as const,
      runId: 'r1',
      data: { effectId, kind: 'workspace.create', target: 'ws', probe: { path } },
    });
    far.append(s1, [
      intent('eff_made', made),
      intent('eff_missing', missing),
      { type: 'run.started', runId: 'r1', data: { pid: DEAD_PID, pidStart: 1 } },
    ]);
    orphanClaim(far, 'r1');
    const near = again({ dataDir: folder(), databaseUrl: options.databaseUrl });
    const nearLease = registerHost(near, { hostId: hostIdOf(near.dataDir), version: 'test' });
    fenceRunWrites(near, nearLease);
    expire(far, farLease);
    // The taker cannot see the far disk: both effects unknown, the session paused.
    const takeover = takeOverDeadHosts(near, nearLease);
    expect(takeover.effects.map((e) => e.status)).toEqual(['unknown', 'unknown']);
    expect(near.sessionControl(s1).paused).not.toBeNull();
    // The taker's own recovery cannot either: nothing of another folder's is probed there.
    expect((await reconcile(near)).resumedSessions).toEqual([]);

    // The far host back on its folder (a new start): it probes its own disk, decides both, and the session resumes.
    const back = again(options);
    fenceRunWrites(back, registerHost(back, { hostId: hostIdOf(options.dataDir), version: 'test' }));
    const report = await reconcile(back);
    expect(report.effects.map((e) => [e.effectId, e.status])).toEqual([
      ['eff_made', 'succeeded'],
      ['eff_missing', 'failed'],
    ]);
    expect(report.resumedSessions).toEqual([s1]);
    expect(back.sessionControl(s1)).toMatchObject({ paused: null, openEffects: [] });
    const resolved = back.readEvents(s1).filter((e) => e.type === 'effect.resolved');
    expect(resolved.map((e) => (e.data as { by: string }).by)).toEqual([
      `recovery on host ${farLease.hostId}`,
      `recovery on host ${farLease.hostId}`,
    ]);
    // Once: a second start finds nothing left to decide.
    expect((await reconcile(again(options))).effects).toEqual([]);
  });

  it("a waiting run's reclaim that takes a host over hands its queued runs to the host's listener", async () => {
    const { store: far, options, lease: farLease, s1 } = leasedHostWithRun();
    const near = again({ dataDir: folder(), databaseUrl: options.databaseUrl });
    const nearLease = registerHost(near, { hostId: hostIdOf(near.dataDir), version: 'test' });
    fenceRunWrites(near, nearLease);
    const heard: TakeoverReport[] = [];
    onTakeovers(near, (report) => heard.push(report));
    expire(far, farLease);
    // r1, never claimed, is re-owned by the reclaim's takeover: the listener (the host's dispatcher) must adopt it.
    await reclaimDeadOwners(near);
    expect(heard.map((r) => r.reownedRuns)).toEqual([['r1']]);
    expect(near.run('r1')).toMatchObject({ status: 'queued', ownerHost: nearLease.hostId });
    expect(claim(near, 'r1', s1).ok).toBe(true);
  });

  it('an effect the returning host cannot decide either stays for a human, the session paused', async () => {
    const { store: far, options, lease: farLease, s1 } = leasedHostWithRun();
    expect(claim(far, 'r1', s1).ok).toBe(true);
    far.append(s1, [
      {
        type: 'effect.intent',
        runId: 'r1',
        data: { effectId: 'eff_odd', kind: 'no.such.kind', target: 'x', probe: {} },
      },
      // Recorded by the folder before it was moved (or on the machine a backup of it came from): what is at that
      // path now, here, says nothing — it once was decided "failed" although the workspace was there, moved along.
      {
        type: 'effect.intent',
        runId: 'r1',
        data: { effectId: 'eff_moved', kind: 'workspace.create', target: 'ws', probe: { path: join(folder(), 'r1') } },
      },
    ]);
    orphanClaim(far, 'r1');
    const near = again({ dataDir: folder(), databaseUrl: options.databaseUrl });
    const nearLease = registerHost(near, { hostId: hostIdOf(near.dataDir), version: 'test' });
    expire(far, farLease);
    takeOverDeadHosts(near, nearLease);
    const back = again(options);
    const report = await reconcile(back);
    expect(report.resumedSessions).toEqual([]);
    expect(back.sessionControl(s1).paused).not.toBeNull();
    expect(
      back
        .sessionControl(s1)
        .openEffects.map((e) => e.effectId)
        .sort(),
    ).toEqual(['eff_moved', 'eff_odd']);
  });

  /** Make `lease`'s start one that ran in another pid scope (another machine, another boot, another container). */
  const elsewhere = (store: Store, lease: HostLease) =>
    dbOf(store)
      .prepare("UPDATE hosts SET pid_scope = 'another-boot/pid:[1]' WHERE host_id = ? AND epoch = ?")
      .run(lease.hostId, lease.epoch);

  it("a start of this folder's host in another pid scope (a copied folder) is judged by its lease", async () => {
    const { store: copy, options, lease: original, s1 } = leasedHostWithRun();
    expect(claim(copy, 'r1', s1).ok).toBe(true);
    copy.append(s1, [{ type: 'run.started', runId: 'r1', data: { pid: DEAD_PID, pidStart: 1 } }]);
    orphanClaim(copy, 'r1'); // no process with its host's pid here: on the original's machine it runs
    elsewhere(copy, original);
    const now = again(options);
    const nowLease = registerHost(now, { hostId: hostIdOf(options.dataDir), version: 'test' });
    fenceRunWrites(now, nowLease);
    expect(ownerIsLocal(now, now.run('r1')!)).toBe(false);
    // The original's lease holds: the copy's start leaves its run alone (it once interrupted it, F1).
    expect((await reconcile(now)).interruptedRuns).toEqual([]);
    expect(takeOverDeadHosts(now, nowLease).hosts).toEqual([]);
    expect(now.run('r1')).toMatchObject({ status: 'running' });
    // Once it ran out, the run is the takeover's to end, once.
    expire(now, original);
    expect(takeOverDeadHosts(now, nowLease).interruptedRuns.map((r) => r.runId)).toEqual(['r1']);
    expect(now.readEvents(s1).filter((e) => e.type === 'run.interrupted')).toHaveLength(1);
  });

  it('its own earlier start in another pid scope (before a reboot), taken over by it: decided here', async () => {
    const { store: before, options, lease: beforeLease, s1 } = leasedHostWithRun();
    expect(claim(before, 'r1', s1).ok).toBe(true);
    const made = join(options.dataDir, 'workspaces', 'r1');
    mkdirSync(made, { recursive: true });
    before.append(s1, [
      {
        type: 'effect.intent',
        runId: 'r1',
        data: { effectId: 'eff_made', kind: 'workspace.create', target: 'ws', probe: { path: made } },
      },
      { type: 'run.started', runId: 'r1', data: { pid: DEAD_PID, pidStart: 1 } },
    ]);
    orphanClaim(before, 'r1');
    elsewhere(before, beforeLease);
    const now = again(options);
    const nowLease = registerHost(now, { hostId: hostIdOf(options.dataDir), version: 'test' });
    fenceRunWrites(now, nowLease);
    // Back after a reboot sooner than the lease: its start's run is not judged by pid, so left to the lease.
    expect((await reconcile(now)).interruptedRuns).toEqual([]);
    expire(now, beforeLease);
    const heard: TakeoverReport[] = [];
    onTakeovers(now, (report) => heard.push(report));
    await reclaimDeadOwners(now);
    // Its own lease tick, or a waiting run's reclaim, takes the start over: the effect is on this disk, decided at
    // once (not left paused until the folder's next start), and the session resumes.
    expect(heard).toHaveLength(1);
    expect(heard[0]!.interruptedRuns.map((r) => r.runId)).toEqual(['r1']);
    expect(heard[0]!.settledHere?.effects.map((e) => [e.effectId, e.status])).toEqual([['eff_made', 'succeeded']]);
    expect(heard[0]!.settledHere?.resumedSessions).toEqual([s1]);
    expect(now.sessionControl(s1)).toMatchObject({ paused: null, openEffects: [] });
  });
});

describe('run owners on SQLite', () => {
  const { fresh } = storesOf(sqliteBackend());

  it('are always local (one data folder, one machine): judged by pid, whatever lease queued them', async () => {
    const { store } = fresh();
    fenceRunWrites(store, registerHost(store, { hostId: 'hst_elsewhere', version: 'test' }));
    const s1 = store.ensureSession('default', 'b1', 'c1').sessionId;
    queue(store, s1, 'r1');
    expect(claim(store, 'r1', s1).ok).toBe(true);
    orphanClaim(store, 'r1');
    expect(ownerIsLocal(store, store.run('r1')!)).toBe(true);
    expect((await reconcile(store)).interruptedRuns.map((r) => r.runId)).toEqual(['r1']);
  });
});
