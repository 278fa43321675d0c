// The approvals table (host/state/approvals.ts) on real SQLite: a decision is atomic and made once, across
// connections; expiry and voiding end an approval for good; a grant is never wider than asked; every change is audited
// (without the runner's summary) and the chain verifies.
import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { verifyAudit } from '../../../host/audit/verify.js';
import {
  approvalById,
  approvalsChangedSince,
  decideApproval,
  expireApprovals,
  insertApproval,
  lastApprovalChange,
  listApprovals,
  MAX_SUMMARY_CHARS,
  voidApprovals,
  type NewApproval,
} from '../../../host/state/approvals.js';
import { auditTable } from '../../../host/state/auditTable.js';
import {
  capabilityGrantById,
  listCapabilityGrants,
  liveCapabilityGrants,
} from '../../../host/state/capabilityGrants.js';
import { dbOf, Store } from '../../../host/state/store.js';
import { rawDb } from '../../helpers/rawDb.js';
import { sameStore, tempStore, tempStoreKind } from '../../helpers/store.js';

const opened: { store: Store; dataDir: string }[] = [];
const extra: Store[] = [];
function open() {
  const s = tempStore();
  opened.push(s);
  return s;
}
afterEach(() => {
  for (const store of extra.splice(0)) store.close();
  for (const { store, dataDir } of opened.splice(0)) {
    store.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

const T0 = '2026-12-01T10:00:00.000Z';
const at = (minutes: number) => new Date(Date.parse(T0) + minutes * 60_000).toISOString();

let n = 0;
function ask(over: Partial<NewApproval> = {}): NewApproval {
  n += 1;
  return {
    tenant: 'acme',
    runId: 'run_1',
    sessionId: 'ses_1',
    bindingId: 'helper',
    via: 'runner',
    effect: 'network',
    target: { kind: 'domain', value: 'api.example.com' },
    summary: `fetch the docs (${n})`,
    dataClass: null,
    destination: 'api.example.com',
    risk: { score: 40, level: 'medium', reasons: ['new destination'] },
    goalRevision: 1,
    groupId: null,
    requestedLifetime: 'session',
    createdAt: at(n / 1000),
    expiresAt: at(5),
    ...over,
  };
}

const auditOf = (store: Store, type: string) =>
  rawDb(store)
    .prepare('SELECT actor, run_id AS runId, data FROM audit WHERE type = ? ORDER BY seq')
    .all(type)
    .map((r) => {
      const row = r as { actor: string; runId: string | null; data: string };
      return { ...row, data: JSON.parse(row.data) as Record<string, unknown> };
    });

describe('approvals', () => {
  it('an inserted approval reads back as stored, pending, its summary clipped; the request is audited', () => {
    const { store } = open();
    const long = `${'x'.repeat(MAX_SUMMARY_CHARS)}TAIL`;
    const row = insertApproval(store, ask({ summary: long, dataClass: 'secret', groupId: 'grp_1' }));
    expect(row.id).toMatch(/^apr_[0-9a-f-]{36}$/);
    expect(row).toMatchObject({
      status: 'pending',
      target: { kind: 'domain', value: 'api.example.com' },
      risk: { score: 40, level: 'medium', reasons: ['new destination'] },
      dataClass: 'secret',
      groupId: 'grp_1',
      decidedAt: null,
      grantId: null,
    });
    expect(row.summary).toHaveLength(MAX_SUMMARY_CHARS);
    expect(approvalById(store, row.id)).toEqual(row);
    expect(approvalById(store, row.id, 'beta')).toBeUndefined();
    const [audit] = auditOf(store, 'approval.requested');
    expect(audit).toMatchObject({ actor: 'host', runId: 'run_1', data: { approvalId: row.id, effect: 'network' } });
    expect(JSON.stringify(audit)).not.toContain('fetch the docs');
  });

  it('refuses an expiry not after creation, naming both times', () => {
    const { store } = open();
    expect(() => insertApproval(store, ask({ expiresAt: T0, createdAt: T0 }))).toThrow(/expiresAt .* createdAt/);
  });

  it('approving with a lifetime grants exactly the effect and target; a second decision is not_pending', () => {
    const { store } = open();
    const row = insertApproval(store, ask());
    const first = decideApproval(store, row.id, {
      outcome: 'approved',
      by: 'user:ada',
      at: at(1),
      lifetime: 'session',
      reason: 'docs are public',
    });
    if (!first.ok) throw new Error(`not decided: ${first.code}`);
    expect(first.row).toMatchObject({ status: 'approved', decidedBy: 'user:ada', decidedAt: at(1) });
    expect(first.grant).toMatchObject({
      capability: 'network',
      scope: { kind: 'domain', value: 'api.example.com' },
      lifetime: 'session',
      sessionId: 'ses_1',
      grantor: 'user:ada',
      approvalId: row.id,
    });
    expect(first.grant!.runId).toBeUndefined();
    expect(first.row.grantId).toBe(first.grant!.id);
    expect(capabilityGrantById(store, first.grant!.id)).toEqual(first.grant);

    const second = decideApproval(store, row.id, { outcome: 'denied', by: 'user:bob', at: at(2) });
    expect(second).toMatchObject({
      ok: false,
      code: 'not_pending',
      row: { status: 'approved', decidedBy: 'user:ada' },
    });
    expect(approvalById(store, row.id)!.status).toBe('approved');
    const decided = auditOf(store, 'approval.approved');
    expect(decided).toEqual([
      expect.objectContaining({
        actor: 'user:ada',
        data: expect.objectContaining({ approvalId: row.id, lifetime: 'session', grantId: first.grant!.id }),
      }),
    ]);
    expect(auditOf(store, 'approval.denied')).toEqual([]);
    expect(auditOf(store, 'grant.created')).toHaveLength(1);
  });

  it('approving once (the default) makes no grant; denying makes none either', () => {
    const { store } = open();
    const a = insertApproval(store, ask());
    const b = insertApproval(store, ask());
    const once = decideApproval(store, a.id, { outcome: 'approved', by: 'user:ada', at: at(1) });
    const denied = decideApproval(store, b.id, { outcome: 'denied', by: 'user:ada', at: at(1), reason: 'no' });
    expect(once).toMatchObject({ ok: true, row: { status: 'approved', grantId: null } });
    expect('grant' in once).toBe(false);
    expect(denied).toMatchObject({ ok: true, row: { status: 'denied', reason: 'no', grantId: null } });
    expect(rawDb(store).prepare('SELECT count(*) FROM capability_grants').pluck().get()).toBe(0);
  });

  it('never grants wider than asked: a longer lifetime is refused and nothing changes', () => {
    const { store } = open();
    const row = insertApproval(store, ask({ requestedLifetime: 'run' }));
    for (const lifetime of ['session', 'binding'] as const) {
      const r = decideApproval(store, row.id, { outcome: 'approved', by: 'user:ada', at: at(1), lifetime });
      expect(r).toMatchObject({ ok: false, code: 'wider_than_asked', row: { status: 'pending' } });
    }
    expect(rawDb(store).prepare('SELECT count(*) FROM capability_grants').pluck().get()).toBe(0);
    const ok = decideApproval(store, row.id, { outcome: 'approved', by: 'user:ada', at: at(1), lifetime: 'run' });
    expect(ok).toMatchObject({ ok: true, grant: { lifetime: 'run', runId: 'run_1', sessionId: 'ses_1' } });
  });

  it('a decision after the expiry is refused expired, and the approval is expired by the host', () => {
    const { store } = open();
    const row = insertApproval(store, ask());
    const late = decideApproval(store, row.id, { outcome: 'approved', by: 'user:ada', at: at(5), lifetime: 'run' });
    expect(late).toMatchObject({ ok: false, code: 'expired', row: { status: 'expired', decidedBy: 'host' } });
    expect(rawDb(store).prepare('SELECT count(*) FROM capability_grants').pluck().get()).toBe(0);
    expect(decideApproval(store, row.id, { outcome: 'denied', by: 'user:ada', at: at(6) })).toMatchObject({
      ok: false,
      code: 'not_pending',
    });
    expect(auditOf(store, 'approval.expired')).toEqual([expect.objectContaining({ actor: 'host' })]);
  });

  it("another tenant's approval is not_found, exactly like an unknown id", () => {
    const { store } = open();
    const row = insertApproval(store, ask());
    const d = { outcome: 'approved', by: 'api:x', at: at(1), tenant: 'beta' } as const;
    expect(decideApproval(store, row.id, d)).toEqual({ ok: false, code: 'not_found' });
    expect(decideApproval(store, 'apr_nope', d)).toEqual({ ok: false, code: 'not_found' });
    expect(approvalById(store, row.id)!.status).toBe('pending');
    expect(decideApproval(store, row.id, { ...d, tenant: 'acme' })).toMatchObject({ ok: true });
  });

  it('decisions interleaved from two connections on one file: exactly one per approval wins', async () => {
    const { store } = open();
    const other = Store.open(sameStore(store));
    extra.push(other);
    const rows = Array.from({ length: 20 }, () => insertApproval(store, ask()));
    // Interleave the two connections' decisions of every approval (each a real IMMEDIATE transaction).
    const results = await Promise.all(
      rows.flatMap((row, i) => [
        Promise.resolve().then(() =>
          decideApproval(i % 2 ? store : other, row.id, { outcome: 'approved', by: 'user:a', at: at(1) }),
        ),
        Promise.resolve().then(() =>
          decideApproval(i % 2 ? other : store, row.id, { outcome: 'denied', by: 'user:b', at: at(1) }),
        ),
      ]),
    );
    for (let i = 0; i < rows.length; i++) {
      const pair = [results[2 * i]!, results[2 * i + 1]!];
      expect(pair.filter((r) => r.ok)).toHaveLength(1);
      expect(pair.filter((r) => !r.ok)).toEqual([expect.objectContaining({ code: 'not_pending' })]);
    }
    const audited = auditOf(store, 'approval.approved').length + auditOf(store, 'approval.denied').length;
    expect(audited).toBe(rows.length);
  });

  it('concurrent decisions from two processes on one file: exactly one wins', async () => {
    const { store } = open();
    const { dataDir, databaseUrl = '' } = sameStore(store);
    const row = insertApproval(store, ask());
    const { execa } = await import('execa');
    const script =
      "import { Store } from './host/state/store.ts';" +
      "import { decideApproval } from './host/state/approvals.ts';" +
      'const [dir, url, id, outcome, at] = process.argv.slice(1);' +
      'const s = Store.open({ dataDir: dir, ...(url ? { databaseUrl: url } : {}) });' +
      "const r = decideApproval(s, id, { outcome, by: 'user:' + outcome, at });" +
      's.close(); console.log(JSON.stringify({ ok: r.ok, code: r.ok ? null : r.code }));';
    const run = (outcome: string) =>
      execa(
        process.execPath,
        ['--import', 'tsx', '--input-type=module', '-e', script, dataDir, databaseUrl, row.id, outcome, at(1)],
        {
          cwd: `${import.meta.dirname}/../../..`,
        },
      );
    const answers = (await Promise.all([run('approved'), run('denied')])).map(
      (r) => JSON.parse(r.stdout) as { ok: boolean; code: string | null },
    );
    expect(
      answers.filter((a) => a.ok),
      JSON.stringify(answers),
    ).toHaveLength(1);
    expect(answers.filter((a) => !a.ok)).toEqual([{ ok: false, code: 'not_pending' }]);
    expect(['approved', 'denied']).toContain(approvalById(store, row.id)!.status);
  }, 30_000);

  it('expireApprovals turns the due pending ones expired (host), and only those', () => {
    const { store } = open();
    const due = insertApproval(store, ask({ expiresAt: at(1) }));
    const later = insertApproval(store, ask({ expiresAt: at(10) }));
    const decided = insertApproval(store, ask({ expiresAt: at(1) }));
    decideApproval(store, decided.id, { outcome: 'denied', by: 'user:ada', at: at(0.5) });
    const expired = expireApprovals(store, at(2));
    expect(expired.map((r) => r.id)).toEqual([due.id]);
    expect(expired[0]).toMatchObject({ status: 'expired', decidedBy: 'host', decidedAt: at(2) });
    expect(approvalById(store, later.id)!.status).toBe('pending');
    expect(approvalById(store, decided.id)!.status).toBe('denied');
    expect(expireApprovals(store, at(2))).toEqual([]);
  });

  it("voidApprovals of one id (its request ended) leaves the run's other pending approvals waiting", () => {
    const { store } = open();
    const gone = insertApproval(store, ask());
    const twin = insertApproval(store, ask());
    const voided = voidApprovals(store, { runId: 'run_1', id: gone.id }, at(1), 'its request ended');
    expect(voided.map((r) => [r.id, r.status])).toEqual([[gone.id, 'void']]);
    expect(approvalById(store, twin.id)!.status).toBe('pending');
    expect(voidApprovals(store, { runId: 'run_2', id: twin.id }, at(1), 'not its run')).toEqual([]);
  });

  it("voidApprovals ends a finished run's pending approvals; deciding one is then not_pending", () => {
    const { store } = open();
    const mine = insertApproval(store, ask());
    const other = insertApproval(store, ask({ runId: 'run_2' }));
    const voided = voidApprovals(store, { runId: 'run_1' }, at(1), 'the run ended completed');
    expect(voided).toEqual([
      expect.objectContaining({ id: mine.id, status: 'void', reason: 'the run ended completed', decidedBy: 'host' }),
    ]);
    expect(approvalById(store, other.id)!.status).toBe('pending');
    expect(decideApproval(store, mine.id, { outcome: 'approved', by: 'user:ada', at: at(2) })).toMatchObject({
      ok: false,
      code: 'not_pending',
      row: { status: 'void' },
    });
    expect(auditOf(store, 'approval.voided')).toEqual([
      expect.objectContaining({
        actor: 'host',
        runId: 'run_1',
        data: expect.objectContaining({ approvalId: mine.id }),
      }),
    ]);
  });

  it('lists in creation order, a keyset page at a time, by tenant, status and run', () => {
    const { store } = open();
    const rows = [
      insertApproval(store, ask()),
      insertApproval(store, ask({ tenant: 'beta' })),
      insertApproval(store, ask({ runId: 'run_2' })),
      insertApproval(store, ask()),
      insertApproval(store, ask()),
    ];
    decideApproval(store, rows[3]!.id, { outcome: 'denied', by: 'user:ada', at: at(1) });
    const acme = rows.filter((r) => r.tenant === 'acme').map((r) => r.id);
    const first = listApprovals(store, { tenant: 'acme', limit: 2 });
    const second = listApprovals(store, { tenant: 'acme', limit: 2, after: first.at(-1)!.id });
    const third = listApprovals(store, { tenant: 'acme', limit: 2, after: second.at(-1)!.id });
    expect([...first, ...second, ...third].map((r) => r.id)).toEqual(acme);
    expect(third).toHaveLength(0);
    expect(listApprovals(store, { tenant: 'acme', status: 'pending', limit: 10 }).map((r) => r.id)).toEqual(
      [rows[0]!, rows[2]!, rows[4]!].map((r) => r.id),
    );
    expect(listApprovals(store, { runId: 'run_2', limit: 10 }).map((r) => r.id)).toEqual([rows[2]!.id]);
    expect(listApprovals(store, { limit: 10 })).toHaveLength(5);
    expect(() => listApprovals(store, { tenant: 'acme', limit: 2, after: rows[1]!.id })).toThrow(/after: no approval/);
    // Newest first: the same approvals reversed, page by page with the same cursor rule.
    const d1 = listApprovals(store, { tenant: 'acme', limit: 2, order: 'desc' });
    const d2 = listApprovals(store, { tenant: 'acme', limit: 2, order: 'desc', after: d1.at(-1)!.id });
    const d3 = listApprovals(store, { tenant: 'acme', limit: 2, order: 'desc', after: d2.at(-1)!.id });
    expect([...d1, ...d2, ...d3].map((r) => r.id)).toEqual([...acme].reverse());
    expect(d3).toHaveLength(0);
  });

  it('a decision made on another connection is heard by polling: the commit signal moves, the change is listed', () => {
    const { store } = open();
    const other = Store.open(sameStore(store));
    extra.push(other);
    const row = insertApproval(store, ask());
    const seq = lastApprovalChange(store);
    // SQLite's signal moves at once (data_version); PostgreSQL's when the LISTEN connection hears the notification,
    // a turn later (test/integration/postgres/commitSignal.test.ts).
    const polled = tempStoreKind() === 'sqlite';
    const version = store.commits.version('approvals');
    if (polled) expect(store.commits.version('approvals')).toBe(version); // idle: nothing moved
    decideApproval(other, row.id, { outcome: 'approved', by: 'user:ada', at: at(1), lifetime: 'run' });
    if (polled) expect(store.commits.version('approvals')).not.toBe(version);
    expect(approvalsChangedSince(store, seq)).toEqual([
      { seq: seq + 1, approvalId: row.id, runId: 'run_1', status: 'approved', at: at(1) },
    ]);
    expect(approvalsChangedSince(store, seq, 'run_2')).toEqual([]);
    expect(
      liveCapabilityGrants(store, {
        tenant: 'acme',
        bindingId: 'helper',
        sessionId: 'ses_1',
        runId: 'run_1',
        now: at(2),
      }),
    ).toHaveLength(1);
  });

  it('every change is audited in one chain that verifies, and no record holds the summary', () => {
    const { store } = open();
    const a = insertApproval(store, ask({ summary: 'SUMMARY-CANARY a', requestedLifetime: 'binding' }));
    const b = insertApproval(store, ask({ summary: 'SUMMARY-CANARY b', expiresAt: at(1) }));
    const c = insertApproval(store, ask({ summary: 'SUMMARY-CANARY c' }));
    decideApproval(store, a.id, { outcome: 'approved', by: 'user:ada', at: at(0.5), lifetime: 'binding' });
    expireApprovals(store, at(2));
    voidApprovals(store, { runId: c.runId }, at(3), 'ended');
    const verdict = verifyAudit(auditTable(dbOf(store)), store.key.publicKey);
    expect(verdict).toMatchObject({ ok: true });
    const types = rawDb(store).prepare('SELECT type FROM audit ORDER BY seq').pluck().all();
    expect(types).toEqual(expect.arrayContaining(['approval.requested', 'approval.approved', 'grant.created']));
    expect(types).toEqual(expect.arrayContaining(['approval.expired', 'approval.voided']));
    expect(rawDb(store).prepare("SELECT count(*) FROM audit WHERE data LIKE '%SUMMARY-CANARY%'").pluck().get()).toBe(0);
    expect(approvalById(store, b.id)!.status).toBe('expired');
  });
});

describe('steering: an approval of an older goal revision', () => {
  it('is void when somebody decides it after a newer message changed the goal; the current one decides', () => {
    const { store } = open();
    const { sessionId } = store.ensureSession('acme', 'helper', 'telegram:bot:group:steer');
    store.append(sessionId, [
      { type: 'run.queued', runId: 'run_new', data: { runner: 'x', goalRevision: 2, attempt: 1, bindingId: 'helper' } },
    ]);
    const old = insertApproval(store, ask({ sessionId, runId: 'run_old', goalRevision: 1 }));
    const r = decideApproval(store, old.id, { outcome: 'approved', by: 'user:ada', at: at(1) });
    expect(r).toMatchObject({ ok: false, code: 'superseded', row: { status: 'void', decidedBy: 'host' } });
    expect(auditOf(store, 'approval.voided')).toEqual([
      expect.objectContaining({
        actor: 'host',
        runId: 'run_old',
        data: expect.objectContaining({ why: expect.stringMatching(/newer message/) }),
      }),
    ]);
    expect(listCapabilityGrants(store, { limit: 10 })).toEqual([]);
    const current = insertApproval(store, ask({ sessionId, runId: 'run_new', goalRevision: 2 }));
    expect(decideApproval(store, current.id, { outcome: 'denied', by: 'user:ada', at: at(1) })).toMatchObject({
      ok: true,
    });
  });
});

describe('an approval whose run is over', () => {
  it('is void when somebody decides it: no grant reaches the next run of the session', () => {
    const { store } = open();
    const { sessionId } = store.ensureSession('acme', 'helper', 'telegram:bot:group:over');
    store.append(sessionId, [
      {
        type: 'run.queued',
        runId: 'run_done',
        data: { runner: 'x', goalRevision: 1, attempt: 1, bindingId: 'helper' },
      },
    ]);
    const row = insertApproval(store, ask({ sessionId, runId: 'run_done' }));
    store.append(sessionId, [
      {
        type: 'run.ended',
        runId: 'run_done',
        data: { status: 'failed', reason: 'host stop', exitCode: null, signal: null },
      },
    ]);
    const r = decideApproval(store, row.id, { outcome: 'approved', by: 'user:ada', at: at(1), lifetime: 'session' });
    expect(r).toMatchObject({ ok: false, code: 'run_ended', row: { status: 'void' } });
    expect(listCapabilityGrants(store, { limit: 10 })).toEqual([]);
  });
});

describe('an approval whose run lost its host process', () => {
  it('is void when decided although no recovery has marked the run yet (a serve started before the crash)', () => {
    const { store } = open();
    const { sessionId } = store.ensureSession('acme', 'helper', 'telegram:bot:group:crash');
    store.append(sessionId, [
      {
        type: 'run.queued',
        runId: 'run_crash',
        data: { runner: 'x', goalRevision: 1, attempt: 1, bindingId: 'helper' },
      },
    ]);
    // Claimed by a host process that no longer exists (no pid has this start time).
    rawDb(store)
      .prepare(
        'INSERT INTO run_claims (run_id, session_id, binding_id, host_pid, host_start, at) VALUES (?, ?, ?, ?, ?, ?)',
      )
      .run('run_crash', sessionId, 'helper', 2_147_483_000, 1, at(0));
    const row = insertApproval(store, ask({ sessionId, runId: 'run_crash' }));
    const r = decideApproval(store, row.id, { outcome: 'approved', by: 'user:ada', at: at(1), lifetime: 'session' });
    expect(r).toMatchObject({
      ok: false,
      code: 'run_ended',
      row: { status: 'void', reason: expect.stringMatching(/gone/) },
    });
    expect(listCapabilityGrants(store, { limit: 10 })).toEqual([]);
  });
});
