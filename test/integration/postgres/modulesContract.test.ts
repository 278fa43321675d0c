// Every host/state/ module's public functions on both stores (docs/scale-out.md, "Contract tests"): the same calls,
// the same answers, on the embedded SQLite store and on PostgreSQL (a real cluster, started here). Each test pins what
// the two databases could order or type differently: NULLs in ORDER BY, text order, booleans and numbers, the JSON
// fields read in SQL. The modules with unit suites of their own run those suites on PostgreSQL too (stateSuites,
// hostSuites, propertySuites in this folder).
import { afterAll, describe, expect, it } from 'vitest';
import { approvalStats } from '../../../host/state/approvalStats.js';
import { decideApproval, insertApproval, listApprovals, type NewApproval } from '../../../host/state/approvals.js';
import { auditRowsAfter, auditRowsBefore, configTenantBefore } from '../../../host/state/auditReads.js';
import { latestAuditVerification, recordAuditVerification } from '../../../host/state/auditVerifications.js';
import { claimedRunsTotal, tryClaim } from '../../../host/state/claims.js';
import { ConfigRepo } from '../../../host/state/configRepo.js';
import {
  findDelivery,
  lastGoalRevision,
  liveSessionRuns,
  recordDelivery,
  waitingRunsOfTenant,
  waitingRunsTotal,
} from '../../../host/state/dispatchLog.js';
import { performEffect } from '../../../host/state/effects.js';
import {
  deleteRunReservations,
  insertGatewayCall,
  insertReservation,
  reservationHolders,
  deleteReservation,
  reservedSpend,
  settledSpend,
} from '../../../host/state/gatewayCalls.js';
import { meteredUsage } from '../../../host/state/meteredUsage.js';
import { openEffectIntents, runStartedData, runStatus } from '../../../host/state/recoveryReads.js';
import { controlsAfter, insertCancels, lastControlSeq } from '../../../host/state/runControls.js';
import { askStatus, insertAsk, moveAsk, pendingAsks } from '../../../host/state/runMessages.js';
import { registerHost } from '../../../host/state/hostLeases.js';
import { adoptableRun } from '../../../host/state/hostTakeover.js';
import { fenceRunWrites } from '../../../host/state/runFence.js';
import { chatEvent } from '../../helpers/host.js';
import type { ChatEvent } from '../../../sdk/protocol/types.js';
import {
  deleteRunnerPackage,
  insertRunnerPackage,
  markRunnerPackageTampered,
  runnerPackage,
  runnerPackageListing,
  runnerPackages,
  runnerPackageState,
  refreshRunnerPackageListing,
  type NewRunnerPackage,
} from '../../../host/state/runnerPackages.js';
import { runsPage, sessionsPage } from '../../../host/state/adminLists.js';
import { lastSeqOfSession, readEventsAfter, terminalSeqOfRun } from '../../../host/state/streamReads.js';
import { dbOf, type Store } from '../../../host/state/store.js';
import { sessionsOfTenant, tenantOfRun } from '../../../host/state/tenancy.js';
import {
  activeWebhooks,
  advanceSweep,
  approvalsSince,
  attemptsOf,
  claimDue,
  deliveriesOf,
  hasDelivery,
  insertDelivery,
  insertWebhook,
  markWebhookRemoved,
  nextDue,
  recordAttempt,
  runsEndedSince,
  webhooksOf,
} from '../../../host/state/webhooks.js';
import { postgresBackend, sqliteBackend, type StoreBackend } from '../../helpers/storeBackends.js';

const T0 = Date.parse('2026-12-01T10:00:00.000Z');
const at = (minutes: number) => new Date(T0 + minutes * 60_000).toISOString();

/** A run queued in a new session of (tenant, binding, conversation); its session id. */
function queue(store: Store, tenant: string, bindingId: string, conversation: string, runId: string, goal = 0) {
  const { sessionId } = store.ensureSession(tenant, bindingId, conversation);
  store.append(sessionId, [
    { type: 'run.queued', runId, data: { runner: 'echo', goalRevision: goal, attempt: 1, bindingId } },
  ]);
  return sessionId;
}
const start = (store: Store, sessionId: string, runId: string) =>
  store.append(sessionId, [{ type: 'run.started', runId, data: { pid: 4242, pidStart: 7, recoveryDelivered: [] } }]);
const end = (store: Store, sessionId: string, runId: string, status: 'completed' | 'failed' = 'completed') =>
  store.append(sessionId, [{ type: 'run.ended', runId, data: { status, reason: 'done', exitCode: 0, signal: null } }]);

function ask(over: Partial<NewApproval> & { n: number }): NewApproval {
  const { n, ...rest } = over;
  return {
    tenant: 'acme',
    runId: 'run_1',
    sessionId: 'ses_1',
    bindingId: 'helper',
    via: 'runner',
    effect: 'network',
    target: { kind: 'domain', value: 'api.example.com' },
    summary: `fetch ${n}`,
    dataClass: null,
    destination: 'api.example.com',
    risk: { score: 40, level: 'medium', reasons: ['new destination'] },
    goalRevision: 0,
    groupId: null,
    requestedLifetime: 'session',
    createdAt: at(n / 100),
    expiresAt: at(60),
    ...rest,
  };
}

for (const backend of [sqliteBackend(), postgresBackend()] as StoreBackend[]) {
  describe(`host/state modules: ${backend.name}`, () => {
    const fresh = () => backend.open(backend.fresh());
    afterAll(() => backend.close());

    it('dispatch log: deliveries per tenant, waiting runs, live runs in queue order, the last goal revision', () => {
      const store = fresh();
      const s1 = queue(store, 'acme', 'b1', 'c1', 'run_1', 2);
      queue(store, 'beta', 'b1', 'c2', 'run_2');
      store.append(s1, [
        { type: 'run.queued', runId: 'run_3', data: { runner: 'echo', goalRevision: 10, attempt: 1, bindingId: 'b1' } },
      ]);
      // 10 > 9 > 2: compared as numbers, not as text ('9' > '10').
      store.append(s1, [
        { type: 'run.queued', runId: 'run_4', data: { runner: 'echo', goalRevision: 9, attempt: 1, bindingId: 'b1' } },
      ]);
      expect(lastGoalRevision(store, s1)).toBe(10);
      expect(lastGoalRevision(store, 'ses_none')).toBe(0);
      expect(
        tryClaim(store, { runId: 'run_1', sessionId: s1, bindingId: 'b1', maxPerBinding: 5, maxTotal: 5 }),
      ).toEqual({
        ok: true,
      });
      expect(waitingRunsTotal(store)).toBe(3);
      expect(waitingRunsOfTenant(store, 'acme')).toBe(2);
      expect(liveSessionRuns(store, s1)).toEqual([
        { id: 'run_1', claimed: 1 },
        { id: 'run_3', claimed: 0 },
        { id: 'run_4', claimed: 0 },
      ]);
      expect(claimedRunsTotal(store)).toBe(1);
      const event = { platform: 'telegram', bot: 'bot', id: 'e1' };
      store.transaction(() => recordDelivery(store, 'acme', event, { bindingId: 'b1', sessionId: s1, runId: 'run_1' }));
      expect(findDelivery(store, 'acme', 'telegram', 'bot', 'e1')).toEqual({
        runId: 'run_1',
        sessionId: s1,
        bindingId: 'b1',
      });
      expect(findDelivery(store, 'beta', 'telegram', 'bot', 'e1')).toBeUndefined();
      // The key is unique within a tenant on both stores (each says so in its own words).
      expect(() => recordDelivery(store, 'acme', event, { bindingId: 'b1', sessionId: s1, runId: 'run_3' })).toThrow(
        /UNIQUE|duplicate key/,
      );
      expect(tenantOfRun(store, 'run_2')).toBe('beta');
    });

    it('claims: the session first, then the binding and host limits; an ended run frees its slot', () => {
      const store = fresh();
      const s1 = queue(store, 'acme', 'b1', 'c1', 'run_a');
      const s2 = queue(store, 'acme', 'b1', 'c2', 'run_b');
      const req = (runId: string, sessionId: string, maxPerBinding = 1) => ({
        runId,
        sessionId,
        bindingId: 'b1',
        maxPerBinding,
        maxTotal: 10,
      });
      expect(tryClaim(store, req('run_a', s1))).toEqual({ ok: true });
      expect(tryClaim(store, req('run_b', s2))).toEqual({ ok: false, by: 'binding', deadOwners: false });
      store.append(s1, [
        { type: 'run.queued', runId: 'run_c', data: { runner: 'echo', goalRevision: 0, attempt: 1, bindingId: 'b1' } },
      ]);
      expect(tryClaim(store, req('run_c', s1, 5))).toEqual({ ok: false, by: 'session', deadOwners: false });
      start(store, s1, 'run_a');
      end(store, s1, 'run_a');
      expect(tryClaim(store, req('run_b', s2))).toEqual({ ok: true });
      expect(claimedRunsTotal(store)).toBe(1);
    });

    it('recovery reads: a run started, its status, open effect intents matched by effect id', () => {
      const store = fresh();
      const s = queue(store, 'acme', 'b1', 'c1', 'run_1');
      start(store, s, 'run_1');
      expect(JSON.parse(runStartedData(store, 'run_1')!)).toMatchObject({ pid: 4242 });
      expect(runStartedData(store, 'run_none')).toBeUndefined();
      expect(runStatus(store, 'run_1')).toBe('running');
      performEffect(store, s, 'run_1', { kind: 'workspace.create', target: 'w1', probe: {} }, () => 1);
      store.append(s, [
        {
          type: 'effect.intent',
          runId: 'run_1',
          data: { effectId: 'eff_open', kind: 'git.push', target: 'origin', probe: {} },
        },
      ]);
      const s2 = queue(store, 'acme', 'b1', 'c0', 'run_2');
      store.append(s2, [
        { type: 'effect.intent', runId: null, data: { effectId: 'eff_other', kind: 'x', target: 'y', probe: {} } },
      ]);
      const open = openEffectIntents(store);
      // By session id, then seq: the order is the ids' byte order on both stores.
      const expected = [
        { sessionId: s, runId: 'run_1', effectId: 'eff_open' },
        { sessionId: s2, runId: null, effectId: 'eff_other' },
      ].sort((a, b) => (a.sessionId < b.sessionId ? -1 : 1));
      expect(
        open.map((o) => ({
          sessionId: o.sessionId,
          runId: o.runId,
          effectId: (JSON.parse(o.data) as { effectId: string }).effectId,
        })),
      ).toEqual(expected);
    });

    it("stream reads: a session's and a run's events after a seq, the terminal seq, the last seq", () => {
      const store = fresh();
      const s = queue(store, 'acme', 'b1', 'c1', 'run_1');
      start(store, s, 'run_1');
      store.append(s, [
        { type: 'run.update', runId: 'run_1', data: { runnerSeq: 1, update: { kind: 'message.delta', text: 'a' } } },
      ]);
      store.append(s, [
        { type: 'run.queued', runId: 'run_2', data: { runner: 'echo', goalRevision: 0, attempt: 1, bindingId: 'b1' } },
      ]);
      store.append(s, [
        { type: 'run.update', runId: 'run_1', data: { runnerSeq: 2, update: { kind: 'message.delta', text: 'b' } } },
      ]);
      end(store, s, 'run_1');
      const seqs = (q: { runId?: string; afterSeq: number; limit: number }) =>
        readEventsAfter(store, { sessionId: s, ...q }).map((e) => e.seq);
      expect(seqs({ afterSeq: 0, limit: 100 })).toEqual([1, 2, 3, 4, 5, 6, 7]);
      expect(seqs({ runId: 'run_1', afterSeq: 0, limit: 100 })).toEqual([2, 3, 4, 6, 7]);
      expect(seqs({ runId: 'run_1', afterSeq: 4, limit: 100 })).toEqual([6, 7]);
      expect(seqs({ runId: 'run_1', afterSeq: 2, limit: 2 })).toEqual([3, 4]);
      expect(seqs({ runId: 'run_2', afterSeq: 0, limit: 100 })).toEqual([5]);
      const first = readEventsAfter(store, { sessionId: s, runId: 'run_1', afterSeq: 3, limit: 1 })[0]!;
      expect(first).toMatchObject({ seq: 4, type: 'run.update', runId: 'run_1' });
      expect(JSON.parse(first.dataJson)).toEqual({ runnerSeq: 1, update: { kind: 'message.delta', text: 'a' } });
      expect(terminalSeqOfRun(store, 'run_1')).toBe(7);
      expect(terminalSeqOfRun(store, 'run_2')).toBeUndefined();
      expect(lastSeqOfSession(store, s)).toBe(7);
      expect(lastSeqOfSession(store, 'ses_none')).toBe(0);
    });

    it('admin lists: runs in insertion order a page at a time, sessions by last activity with id ties', () => {
      const store = fresh();
      const runIds = Array.from({ length: 7 }, (_, i) => `run_${String.fromCharCode(122 - i)}`); // z, y, x, …
      const sessions = runIds.map((runId, i) => queue(store, 'acme', i % 2 ? 'b2' : 'b1', `c${i}`, runId));
      queue(store, 'beta', 'b1', 'cx', 'run_beta');
      const walk: string[] = [];
      let before: number | undefined;
      for (;;) {
        const page = runsPage(store, 'acme', { limit: 3, ...(before !== undefined ? { before } : {}) });
        if (page.length === 0) break;
        walk.push(...page.map((r) => r.id));
        before = page.at(-1)!.position;
        if (walk.length === 3) queue(store, 'acme', 'b1', 'late', 'run_late'); // above every cursor: never walked
      }
      expect(walk).toEqual([...runIds].reverse());
      expect(runsPage(store, 'acme', { bindingId: 'b2', limit: 10 }).map((r) => r.id)).toEqual([
        runIds[5],
        runIds[3],
        runIds[1],
      ]);
      expect(runsPage(store, 'acme', { status: ['running'], limit: 10 })).toEqual([]);
      // Activity: the third session gets an event last (sessions stored in one millisecond tie, then go by id).
      const [update] = store.append(sessions[2]!, [
        { type: 'run.update', runId: runIds[2], data: { runnerSeq: 1, update: { kind: 'message.delta', text: 'x' } } },
      ]);
      const all = sessionsPage(store, 'acme', { limit: 100 });
      expect(all).toHaveLength(8); // 7 + the late one; not beta's
      const third = all.find((r) => r.id === sessions[2])!;
      expect(third).toMatchObject({ lastActivityAt: update!.at, bindingId: 'b1', conversationKey: 'c2', runs: 1 });
      expect(third.pausedReason).toBeNull();
      const sorted = [...all].sort((a, b) =>
        a.lastActivityAt === b.lastActivityAt ? (a.id < b.id ? -1 : 1) : a.lastActivityAt < b.lastActivityAt ? 1 : -1,
      );
      expect(all.map((r) => r.id)).toEqual(sorted.map((r) => r.id));
      // Pages after a (lastActivityAt, id) key give the rest, in the same order.
      const firstPage = sessionsPage(store, 'acme', { limit: 3 });
      const last = firstPage.at(-1)!;
      const rest = sessionsPage(store, 'acme', { limit: 100, before: { at: last.lastActivityAt, id: last.id } });
      expect([...firstPage, ...rest].map((r) => r.id)).toEqual(all.map((r) => r.id));
      expect(sessionsOfTenant(store, 'acme', { limit: 100 }).map((r) => r.id)).toHaveLength(8);
    });

    it('approval stats: asks by status, policy and grant answers, revoked grants, the median decision time', () => {
      const store = fresh();
      const s = queue(store, 'acme', 'helper', 'c1', 'run_1');
      for (const [n, decision] of [
        [1, 'approved'],
        [2, 'denied'],
        [3, null],
      ] as const) {
        const row = insertApproval(store, ask({ n, sessionId: s }));
        if (decision)
          decideApproval(store, row.id, { outcome: decision, by: 'user:ada', at: at(n / 100 + n), lifetime: 'once' });
      }
      const decided = (data: Record<string, unknown>) =>
        store.append(s, [{ type: 'approval.decided', runId: 'run_1', data } as never]);
      const target = (value: string) => ({ kind: 'domain', value });
      decided({ effect: 'network', target: target('a'), decision: 'approved', by: 'policy', reason: 'rule' });
      decided({ effect: 'network', target: target('b'), decision: 'denied', by: 'policy', reason: 'floor' });
      decided({
        effect: 'network',
        target: target('c'),
        decision: 'approved',
        by: 'grant grt_1',
        reason: 'granted',
        grantId: 'grt_1',
      });
      const stats = approvalStats(store, {});
      expect(stats).toEqual([
        {
          tenant: 'acme',
          bindingId: 'helper',
          outcomes: {
            asked: 3,
            approved: 1,
            denied: 1,
            expired: 0,
            void: 0,
            auto_allowed_by_grant: 1,
            allowed_by_policy: 1,
            denied_by_policy: 1,
          },
          pending: 1,
          grantsRevoked: 0,
          grantsRevokedAfterUse: 0,
          // Decisions 1 and 2 minutes after their asks: the median of 60 000 and 120 000 ms.
          medianDecisionMs: 90_000,
        },
      ]);
      expect(approvalStats(store, { tenant: 'beta' })).toEqual([]);
    });

    it('gateway calls: settled and reserved spend, reservations of an owner with and without a start time', () => {
      const store = fresh();
      const s = queue(store, 'acme', 'b1', 'c1', 'run_1');
      const call = (status: number, atMs: number) =>
        insertGatewayCall(store, {
          at: new Date(atMs),
          runId: 'run_1',
          sessionId: s,
          bindingId: 'b1',
          modelId: 'm',
          provider: 'scripted',
          endpoint: 'chat',
          status,
          attempts: 1,
          inputTokens: 100,
          outputTokens: 20,
          costUsd: 0.25,
          latencyMs: 3,
          error: null,
        });
      call(200, T0);
      call(500, T0 + 1000);
      expect(settledSpend(store, { runId: 'run_1' })).toEqual({ tokens: 240, cost: 0.5 });
      expect(settledSpend(store, { bindingId: 'b1', sinceMs: T0 })).toEqual({ tokens: 120, cost: 0.25 });
      expect(meteredUsage(store, 'run_1')).toMatchObject({ inputTokens: 100, outputTokens: 20, modelCalls: 1 });
      const reserve = (id: string, pid: number, start: number | null) =>
        insertReservation(store, {
          id,
          runId: 'run_1',
          bindingId: 'b1',
          tokens: 50,
          costUsd: 0.125,
          atMs: T0,
          owner: { pid, start },
        });
      reserve('r1', 11, null);
      reserve('r2', 11, 5);
      reserve('r3', 12, null);
      expect(reservedSpend(store, { bindingId: 'b1' })).toEqual({ tokens: 150, cost: 0.375 });
      // run_1 is no run of the log: no lease owner.
      expect(reservationHolders(store).sort((a, b) => a.id.localeCompare(b.id))).toEqual([
        { id: 'r1', pid: 11, start: null, ownerHost: null, ownerEpoch: null },
        { id: 'r2', pid: 11, start: 5, ownerHost: null, ownerEpoch: null },
        { id: 'r3', pid: 12, start: null, ownerHost: null, ownerEpoch: null },
      ]);
      // A NULL start matches only a NULL start (IS on SQLite, IS NOT DISTINCT FROM on both).
      expect(deleteRunReservations(store, 'run_1', { pid: 11, start: null })).toBe(1);
      deleteReservation(store, 'r2');
      expect(reservedSpend(store, { runId: 'run_1' })).toEqual({ tokens: 50, cost: 0.125 });
    });

    it('webhooks: register, queue once per subject, claim due ones under a lease, record attempts, remove', () => {
      const store = fresh();
      const audit = { type: 'webhook.created', actor: 'user:ada', data: {} };
      insertWebhook(
        store,
        {
          id: 'wh_2',
          tenant: 'acme',
          url: 'https://b',
          events: ['run.ended'],
          secret: 's2',
          createdBy: 'u',
          at: at(1),
        },
        audit,
      );
      insertWebhook(
        store,
        {
          id: 'wh_1',
          tenant: 'acme',
          url: 'https://a',
          events: ['run.ended'],
          secret: 's1',
          createdBy: 'u',
          at: at(1),
        },
        audit,
      );
      expect(webhooksOf(store, 'acme').map((w) => w.id)).toEqual(['wh_1', 'wh_2']); // same time: by id
      const delivery = (id: string, webhookId: string, runId: string, due: number) =>
        insertDelivery(
          store,
          { id, webhookId, tenant: 'acme', runId, type: 'run.ended', body: `{"run":"${runId}"}`, at: at(2) },
          due,
        );
      expect(delivery('d1', 'wh_1', 'run_1', T0)).toBe(true);
      expect(delivery('d1b', 'wh_1', 'run_1', T0)).toBe(false); // one per (registration, subject)
      expect(delivery('d2', 'wh_1', 'run_2', T0 + 10)).toBe(true);
      expect(delivery('d3', 'wh_2', 'run_1', T0 + 5_000)).toBe(true);
      expect(hasDelivery(store, 'wh_1', 'run_1')).toBe(true);
      expect(nextDue(store)).toBe(T0);
      const claimed = claimDue(store, 'worker-a', T0 + 100, T0 + 60_000, 10);
      expect(claimed.map((c) => c.id).sort()).toEqual(['d1', 'd2']);
      expect(claimed.find((c) => c.id === 'd1')).toMatchObject({ webhookId: 'wh_1', url: 'https://a', secret: 's1' });
      expect(claimDue(store, 'worker-b', T0 + 100, T0 + 60_000, 10)).toEqual([]); // leased
      expect(
        recordAttempt(store, 'worker-b', {
          deliveryId: 'd1',
          attempt: 1,
          at: at(3),
          status: 200,
          error: null,
          durationMs: 4,
          state: 'delivered',
          nextAttemptAt: T0,
        }),
      ).toBe(false); // not its lease
      expect(
        recordAttempt(store, 'worker-a', {
          deliveryId: 'd1',
          attempt: 1,
          at: at(3),
          status: 200,
          error: null,
          durationMs: 4,
          state: 'delivered',
          nextAttemptAt: T0,
        }),
      ).toBe(true);
      expect(attemptsOf(store, 'd1')).toEqual([{ attempt: 1, at: at(3), status: 200, error: null, durationMs: 4 }]);
      expect(deliveriesOf(store, 'wh_1').map((d) => [d.id, d.state])).toEqual([
        ['d1', 'delivered'],
        ['d2', 'pending'],
      ]);
      advanceSweep(store, 'wh_1', at(5));
      advanceSweep(store, 'wh_1', at(4)); // never back
      expect(activeWebhooks(store).find((w) => w.id === 'wh_1')).toMatchObject({ sweptTo: at(5) });
      expect(
        markWebhookRemoved(store, 'acme', 'wh_2', at(6), { type: 'webhook.removed', actor: 'user:ada', data: {} }),
      ).toBe(true);
      expect(markWebhookRemoved(store, 'acme', 'wh_2', at(6), { type: 'x', actor: 'u', data: {} })).toBe(false);
      expect(deliveriesOf(store, 'wh_2').map((d) => [d.id, d.state])).toEqual([['d3', 'failed']]);
      expect(webhooksOf(store, 'acme').map((w) => w.id)).toEqual(['wh_1']);
      expect(webhooksOf(store, 'acme', true).map((w) => w.id)).toEqual(['wh_1', 'wh_2']);
    });

    it('webhook sweeps: runs ended and approvals asked since a time, after an (at, id) cursor', () => {
      const store = fresh();
      const s = queue(store, 'acme', 'b1', 'c1', 'run_b');
      store.append(s, [
        { type: 'run.queued', runId: 'run_a', data: { runner: 'echo', goalRevision: 0, attempt: 1, bindingId: 'b1' } },
      ]);
      // One appendMany: both runs end at the same instant, so the id breaks the tie.
      const endEvent = (runId: string) => ({
        sessionId: s,
        event: {
          type: 'run.ended' as const,
          runId,
          data: { status: 'completed' as const, reason: 'done', exitCode: 0, signal: null },
        },
      });
      store.appendMany([endEvent('run_b'), endEvent('run_a')]);
      const ended = runsEndedSince(store, at(-1), undefined, 10);
      expect(ended.map((r) => r.id)).toEqual(['run_a', 'run_b']);
      expect(runsEndedSince(store, at(-1), ended[0], 10).map((r) => r.id)).toEqual(['run_b']);
      const a = insertApproval(store, ask({ n: 1, sessionId: s, runId: 'run_a' }));
      const b = insertApproval(store, ask({ n: 2, sessionId: s, runId: 'run_a' }));
      expect(approvalsSince(store, 'requested', at(0), undefined, 10).map((r) => r.id)).toEqual([a.id, b.id]);
      expect(approvalsSince(store, 'decided', at(0), undefined, 10)).toEqual([]);
    });

    it('runner packages: install, re-install replaces the row, listing revisions, tampered, delete', () => {
      const store = fresh();
      const pkg = (version: string, over: Partial<NewRunnerPackage> = {}): NewRunnerPackage => ({
        runnerId: 'r1',
        version,
        source: 'registry',
        spec: `r1@${version}`,
        packageName: 'r1',
        integrity: null,
        digest: `sha256:${version}`,
        signatures: 'none',
        permissions: { network: false },
        skippedScripts: [],
        nativeBuild: false,
        listing: '{"a":1}',
        installedBy: 'user:ada',
        installedAt: at(1),
        ...over,
      });
      insertRunnerPackage(store, pkg('1.0.0'), at(1));
      insertRunnerPackage(store, pkg('2.0.0', { installedAt: at(2) }), at(2));
      refreshRunnerPackageListing(store, 'r1', '1.0.0', { listing: '{"a":2}' });
      refreshRunnerPackageListing(store, 'r1', '1.0.0', { verifiedAt: at(3) });
      expect(runnerPackageListing(store, 'r1', '1.0.0')).toEqual({ listing: '{"a":2}', listingRev: 2 });
      expect(runnerPackageState(store, 'r1', '1.0.0')).toEqual({
        status: 'ok',
        listingRev: 2,
        verifiedAt: at(3),
        digest: 'sha256:1.0.0',
      });
      expect(markRunnerPackageTampered(store, 'r1', '1.0.0', ['index.js'])).toBe(true);
      expect(markRunnerPackageTampered(store, 'r1', '1.0.0', ['other.js'])).toBe(false);
      expect(runnerPackage(store, 'r1', '1.0.0')).toMatchObject({ status: 'tampered', tampered: ['index.js'] });
      // A repair installs the same version again: every column replaced, the revision and status back to new.
      insertRunnerPackage(store, pkg('1.0.0', { nativeBuild: true, installedAt: at(4) }), at(4));
      expect(runnerPackage(store, 'r1', '1.0.0')).toMatchObject({
        status: 'ok',
        tampered: [],
        listingRev: 1,
        nativeBuild: true,
        installedAt: at(4),
        verifiedAt: at(4),
        permissions: { network: false },
      });
      // By runner, then install time: the repaired 1.0.0 is now the later install.
      expect(runnerPackages(store).map((p) => p.version)).toEqual(['2.0.0', '1.0.0']);
      expect(runnerPackages(store, 'r1').map((p) => p.version)).toEqual(['2.0.0', '1.0.0']);
      expect(deleteRunnerPackage(store, 'r1', '2.0.0')).toBe(true);
      expect(deleteRunnerPackage(store, 'r1', '2.0.0')).toBe(false);
    });

    it("configuration: versions, history, a tenant's objects by its index, daily write bytes, deletion", () => {
      const store = fresh();
      const repo = new ConfigRepo(store);
      expect(repo.put('model', 'm2', { id: 'm2', tenant: 'acme' }, 'u')).toBe('created');
      expect(repo.put('model', 'm1', { id: 'm1' }, 'u')).toBe('created'); // no tenant: the default's
      expect(repo.put('model', 'm2', { id: 'm2', tenant: 'acme' }, 'u')).toBe('unchanged');
      expect(repo.put('model', 'm2', { id: 'm2', tenant: 'acme', x: 1 }, 'u')).toBe('updated');
      expect(repo.put('binding', 'b1', { id: 'b1', tenant: 'acme' }, 'u')).toBe('created');
      expect(repo.listOfTenant('model', 'acme').map((o) => [o.id, o.version])).toEqual([['m2', 2]]);
      expect(repo.listOfTenant('model', 'default').map((o) => o.id)).toEqual(['m1']);
      expect(repo.listAllOfTenant('acme').map((o) => `${o.kind}:${o.id}`)).toEqual(['binding:b1', 'model:m2']);
      expect(repo.list().map((o) => `${o.kind}:${o.id}`)).toEqual(['binding:b1', 'model:m1', 'model:m2']);
      repo.countWritten('acme', '2026-12-01', 100);
      repo.countWritten('acme', '2026-12-01', 50);
      expect(repo.writtenOn('acme', '2026-12-01')).toBe(150);
      expect(repo.writtenOn('acme', '2026-12-02')).toBe(0);
      expect(repo.delete('model', 'm2', 'u')).toBe(true);
      expect(repo.delete('model', 'm2', 'u')).toBe(false);
      expect(repo.history('model', 'm2').map((h) => [h.version, h.action])).toEqual([
        [1, 'created'],
        [2, 'updated'],
        [3, 'deleted'],
      ]);
      const deletion = repo.history('model', 'm2')[2]!;
      expect(configTenantBefore(store, 'model', 'm2', { deletedAt: deletion.at, version: 3 })).toBe('acme');
      expect(configTenantBefore(store, 'model', 'm1', { at: '9999' })).toBeUndefined(); // stored without a tenant
    });

    it('run messages: an asked event is stored redacted, once per delivery key, and blanked once answered', () => {
      // A redactor that knows one secret, as the host's does (docs/security-model.md, "Redaction").
      const redact = (value: unknown): unknown =>
        JSON.parse(JSON.stringify(value).replaceAll('canary-7f3a', '[REDACTED]'));
      const options = backend.fresh();
      const store = backend.open({ ...options, redact });
      const event = { platform: 'telegram', bot: 'b', id: 'evt_1', text: 'the key is canary-7f3a' };
      const ask = { runId: 'run_1', sessionId: 'ses_1', tenant: 'acme', event };
      const { id, existing } = insertAsk(store, ask, 'hst_asker');
      expect(existing).toBe(false);
      expect(insertAsk(store, ask, 'hst_other')).toEqual({ id, existing: true });
      const rows = () => (dbOf(store).prepare('SELECT event FROM run_messages').pluck().all() as string[]).sort();
      expect(rows().join()).not.toContain('canary-7f3a');
      const [pending] = pendingAsks(store, ['run_1']);
      expect(JSON.parse(pending!.event)).toEqual({ ...event, text: 'the key is [REDACTED]' });
      // The owner's host may know a secret the asker's does not (another environment): its own read redacts it too.
      const other = { ...event, id: 'evt_2', text: 'only the owner knows owner-9c1e' };
      const { id: otherId } = insertAsk(store, { ...ask, event: other }, 'hst_asker');
      const owner = backend.open({
        ...options,
        redact: (value: unknown): unknown => JSON.parse(JSON.stringify(value).replaceAll('owner-9c1e', '[REDACTED]')),
      });
      expect(pendingAsks(owner, ['run_1']).map((a) => (JSON.parse(a.event) as { text: string }).text)).toEqual([
        'the key is [REDACTED]',
        'only the owner knows [REDACTED]',
      ]);
      expect(moveAsk(store, otherId, 'pending', 'withdrawn')).toBe(true);
      expect(moveAsk(store, id, 'pending', 'delivering')).toBe(true);
      expect(pendingAsks(store, ['run_1'])).toEqual([]);
      expect(moveAsk(store, id, 'pending', 'withdrawn')).toBe(false); // taken: the asker can no longer withdraw it
      expect(rows()).toEqual(['{}', pending!.event].sort()); // kept while its owner delivers it; the withdrawn blanked
      expect(moveAsk(store, id, 'delivering', 'accepted')).toBe(true);
      expect(askStatus(store, id)).toEqual({ status: 'accepted', reason: null });
      expect(rows()).toEqual(['{}', '{}']);
    });

    it("an adopted run's message is read redacted by the adopting host's store too", () => {
      // The host that queued it lacked a secret the adopting host's environment holds (outside attack 6, F2).
      const options = backend.fresh();
      const queuer = backend.open(options);
      const lease = registerHost(queuer, { hostId: 'hst_queuer', version: 'test' });
      fenceRunWrites(queuer, lease);
      const { sessionId } = queuer.ensureSession('default', 'b1', 'c1');
      queuer.append(sessionId, [
        { type: 'message.received', data: { event: chatEvent({ text: 'the key is owner-9c1e' }) as ChatEvent } },
        { type: 'run.queued', runId: 'run_q', data: { runner: 'echo', goalRevision: 0, attempt: 1, bindingId: 'b1' } },
      ]);
      const adopter = backend.open({
        ...options,
        redact: (value: unknown): unknown => JSON.parse(JSON.stringify(value).replaceAll('owner-9c1e', '[REDACTED]')),
      });
      const adopted = adoptableRun(adopter, 'run_q', lease);
      expect(adopted).toMatchObject({ runId: 'run_q', sessionId, bindingId: 'b1' });
      expect(JSON.stringify(adopted!.event)).toContain('the key is [REDACTED]');
      expect(JSON.stringify(adopted!.event)).not.toContain('owner-9c1e');
    });

    it('what another host wrote is handed out redacted by a host that knows a secret the writer did not', () => {
      // The writer's environment lacks the secret; the reader's has it (outside attack 7, F3). On SQLite one host
      // writes the store, with the redactor it reads with: reads hand out what it stored.
      const options = backend.fresh();
      const writer = backend.open(options);
      const { sessionId } = writer.ensureSession('acme', 'b1', 'c1');
      writer.append(sessionId, [
        { type: 'message.received', data: { event: chatEvent({ text: 'the key is owner-9c1e' }) as ChatEvent } },
        { type: 'run.queued', runId: 'run_r', data: { runner: 'echo', goalRevision: 0, attempt: 1, bindingId: 'b1' } },
      ]);
      insertApproval(writer, ask({ n: 1, sessionId, runId: 'run_r', summary: 'post owner-9c1e to the wiki' }));
      const reader = backend.open({
        ...options,
        redact: (value: unknown): unknown => JSON.parse(JSON.stringify(value).replaceAll('owner-9c1e', '[REDACTED]')),
      });
      const handedOut = JSON.stringify([
        reader.readEvents(sessionId),
        reader.historyEvents(sessionId),
        reader.session(sessionId),
        readEventsAfter(reader, { sessionId, afterSeq: 0, limit: 10 }),
        listApprovals(reader, { tenant: 'acme', limit: 10 }),
      ]);
      if (backend.name === 'postgres') {
        expect(handedOut).not.toContain('owner-9c1e');
        expect(handedOut.split('[REDACTED]').length - 1).toBeGreaterThanOrEqual(5);
      } else expect(handedOut).toContain('owner-9c1e');
      // What is stored is left as its writer stored it.
      expect(JSON.stringify(writer.readEvents(sessionId))).toContain('owner-9c1e');
    });

    it('run controls, audit reads with tenants, recorded verifications, runner state', () => {
      const store = fresh();
      const s = queue(store, 'acme', 'b1', 'c1', 'run_1');
      const base = lastControlSeq(store);
      store.transaction(() => insertCancels(store, ['run_1', 'run_2'], 'stop', 'user:ada', at(1)));
      expect(controlsAfter(store, base)).toEqual([
        { seq: base + 1, runId: 'run_1', action: 'cancel', reason: 'stop', by: 'user:ada' },
        { seq: base + 2, runId: 'run_2', action: 'cancel', reason: 'stop', by: 'user:ada' },
      ]);
      expect(lastControlSeq(store)).toBe(base + 2);
      store.transaction(() => {
        store.audit.append({ type: 'test.run', actor: 'host', runId: 'run_1', data: {} });
        store.audit.append({ type: 'test.none', actor: 'host', data: {} });
      });
      const rows = auditRowsAfter(store, 0, 1000);
      expect(rows.map((r) => r.seq)).toEqual(rows.map((_, i) => i + 1));
      expect(rows.find((r) => r.type === 'session.created')).toMatchObject({ sessionTenant: 'acme', session_id: s });
      expect(rows.find((r) => r.type === 'test.run')).toMatchObject({ sessionTenant: 'acme' });
      expect(rows.find((r) => r.type === 'test.none')).toMatchObject({ sessionTenant: null });
      const last = rows.at(-1)!.seq;
      expect(auditRowsBefore(store, last + 1, 2).map((r) => r.seq)).toEqual([last, last - 1]);
      expect(latestAuditVerification(store)).toBeNull();
      recordAuditVerification(store, { ok: true, records: last } as never, { via: 'api', by: 'tok_1' });
      expect(latestAuditVerification(store)).toMatchObject({ ok: true, records: last, firstBad: null, via: 'api' });
      store.runnerState.set('scope', 'k', { a: 1 });
      expect(store.runnerState.get('scope', 'k')).toEqual({ found: true, value: { a: 1 } });
      expect(store.runnerState.delete('scope', 'k')).toBe(true);
      expect(store.runnerState.delete('scope', 'k')).toBe(false);
    });
  });
}
