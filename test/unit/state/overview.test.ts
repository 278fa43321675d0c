// The overview's figures (GET /v1/overview, host/state/overview.ts) over a real store: each counts only its tenant,
// the 24 h window by end time, pending approvals not past their expiry; each query reads through an index (its plan
// never scans the runs or approvals table), and stays fast with thousands of other runs. And the recorded audit
// verifications (migration 13): none, a passing one, then a failing one naming the first bad record.
import { afterAll, describe, expect, it } from 'vitest';
import { verifyAuditFor } from '../../../host/ops/auditVerify.js';
import { insertApproval, type NewApproval } from '../../../host/state/approvals.js';
import { latestAuditVerification } from '../../../host/state/auditVerifications.js';
import { OVERVIEW_SQL, tenantOverview } from '../../../host/state/overview.js';
import type { Store } from '../../../host/state/store.js';
import { editAuditPastTriggers, rawDb } from '../../helpers/rawDb.js';
import { itOnSqlite, tempStore } from '../../helpers/store.js';

const stores: Store[] = [];
afterAll(() => stores.forEach((s) => s.close()));
const fresh = (): Store => {
  const { store } = tempStore();
  stores.push(store);
  return store;
};
const inHours = (h: number) => new Date(Date.now() + h * 3_600_000).toISOString();

/** A run of `tenant` that reaches `to`: queued, running, or ended with that status. */
function plantRun(store: Store, tenant: string, runId: string, to: string): void {
  const { sessionId } = store.ensureSession(tenant, 'echo', `conv-${runId}`);
  store.append(sessionId, [
    { type: 'run.queued', runId, data: { runner: 'echo', goalRevision: 0, attempt: 1, bindingId: 'echo' } },
  ]);
  if (to === 'queued') return;
  store.append(sessionId, [{ type: 'run.started', runId, data: { pid: 1, pidStart: 1, recoveryDelivered: [] } }]);
  if (to === 'running') return;
  store.append(sessionId, [
    { type: 'run.ended', runId, data: { status: to, reason: 'done', exitCode: 0, signal: null } as never },
  ]);
}

function ask(store: Store, tenant: string, expiresAt: string): void {
  const { sessionId } = store.ensureSession(tenant, 'echo', 'asks');
  const approval: NewApproval = {
    tenant,
    runId: 'run_asks',
    sessionId,
    bindingId: 'echo',
    via: 'runner',
    effect: 'fs.write',
    target: { kind: 'path', value: 'a.txt' },
    summary: 'write a.txt',
    dataClass: null,
    destination: null,
    risk: { score: 10, level: 'low', reasons: [] },
    goalRevision: 0,
    groupId: null,
    requestedLifetime: 'once',
    createdAt: inHours(-2),
    expiresAt,
  };
  insertApproval(store, approval);
}

describe('tenantOverview', () => {
  it("counts the tenant's runs by outcome in 24 h, running, queued and live pending approvals only", () => {
    const store = fresh();
    plantRun(store, 'acme', 'run_ok1', 'completed');
    plantRun(store, 'acme', 'run_ok2', 'completed');
    plantRun(store, 'acme', 'run_bad', 'failed');
    plantRun(store, 'acme', 'run_old', 'failed');
    plantRun(store, 'acme', 'run_live', 'running');
    plantRun(store, 'acme', 'run_wait1', 'queued');
    plantRun(store, 'acme', 'run_wait2', 'queued');
    plantRun(store, 'beta', 'run_beta1', 'completed');
    plantRun(store, 'beta', 'run_beta2', 'running');
    rawDb(store).prepare('UPDATE runs SET ended_at = ? WHERE id = ?').run(inHours(-25), 'run_old');
    ask(store, 'acme', inHours(1));
    ask(store, 'acme', inHours(-1)); // pending, but past its expiry: not waiting for anyone any more
    ask(store, 'beta', inHours(1));
    const now = new Date();
    const acme = tenantOverview(store, 'acme', now);
    expect(acme).toEqual({
      ended: {
        since: new Date(now.getTime() - 24 * 3_600_000).toISOString(),
        byOutcome: { completed: 2, failed: 1 },
        total: 3,
      },
      running: 1,
      queued: 2,
      pendingApprovals: 1,
    });
    expect(tenantOverview(store, 'beta', now)).toMatchObject({
      ended: { byOutcome: { completed: 1 }, total: 1 },
      running: 1,
      queued: 0,
      pendingApprovals: 1,
    });
    expect(tenantOverview(store, 'nobody', now)).toMatchObject({ ended: { total: 0 }, running: 0, queued: 0 });
  });

  itOnSqlite('reads each figure through an index, and stays fast with 6 000 runs of another tenant', () => {
    const store = fresh();
    store.transaction(() => {
      for (let i = 0; i < 3000; i++) plantRun(store, 'beta', `run_b${i}`, i % 2 ? 'completed' : 'queued');
      for (let i = 0; i < 3000; i++) plantRun(store, 'beta', `run_c${i}`, 'failed');
    });
    rawDb(store).prepare("UPDATE runs SET ended_at = ? WHERE id LIKE 'run_c%'").run(inHours(-48));
    plantRun(store, 'acme', 'run_a', 'running');
    const plan = (sql: string, ...args: unknown[]) =>
      (
        rawDb(store)
          .prepare(`EXPLAIN QUERY PLAN ${sql}`)
          .all(...args) as { detail: string }[]
      ).map((r) => r.detail);
    const plans = {
      ended: plan(OVERVIEW_SQL.ended, inHours(-24), 'acme'),
      inStatus: plan(OVERVIEW_SQL.inStatus, 'running', 'acme'),
      pending: plan(OVERVIEW_SQL.pending, 'acme', inHours(0)),
    };
    expect(plans.ended.join('\n')).toMatch(/SEARCH runs USING COVERING INDEX runs_ended_window \(ended_at>\?\)/);
    expect(plans.inStatus.join('\n')).toMatch(/SEARCH runs USING COVERING INDEX runs_by_status_session \(status=\?/);
    expect(plans.pending.join('\n')).toMatch(/SEARCH approvals USING INDEX approvals_by_tenant_status/);
    for (const lines of Object.values(plans)) expect(lines.join('\n')).not.toMatch(/SCAN (runs|approvals)\b/);
    const start = performance.now();
    const acme = tenantOverview(store, 'acme');
    const ms = performance.now() - start;
    expect(acme).toMatchObject({ running: 1, queued: 0, ended: { total: 0 } });
    expect(tenantOverview(store, 'beta')).toMatchObject({ queued: 1500, ended: { total: 1500 } });
    expect(ms).toBeLessThan(50); // ~1 ms here; the whole-table reads took ~10 ms before the index
  });
});

describe('recorded audit verifications', () => {
  it('none, then the last verification: ok, then failing at the first bad record', () => {
    const store = fresh();
    expect(latestAuditVerification(store)).toBeNull();
    plantRun(store, 'acme', 'run_1', 'completed');
    const ok = verifyAuditFor(store, 'acme', { by: 'api:abc' });
    expect(ok.ok).toBe(true);
    expect(latestAuditVerification(store)).toMatchObject({ ok: true, records: ok.records, firstBad: null, via: 'api' });
    const seq = rawDb(store).prepare('SELECT min(seq) FROM audit WHERE seq > 1').pluck().get() as number;
    editAuditPastTriggers(store, `UPDATE audit SET actor = 'someone-else' WHERE seq = ${seq}`);
    const bad = verifyAuditFor(store, 'acme', { by: 'api:abc' });
    expect(bad.ok).toBe(false);
    expect(latestAuditVerification(store)).toMatchObject({
      ok: false,
      firstBad: { seq, problem: 'edited' },
      records: bad.records,
    });
  });
});
