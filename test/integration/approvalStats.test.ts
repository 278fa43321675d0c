// Approval metrics and approval webhooks over real runs (docs/approvals.md §4, §8): the fixture runner
// asks-for-approval asks the host; the binding's policy answers some at once, a person answers others with the real
// CLI in another process, one times out, one is voided by a cancel, grants are made, used and revoked. Then the same
// figures are read three ways — approvalStats() on the store, `paddock approvals stats` (a child process) and
// `/metrics` of a real `paddock serve` child on the same data folder — and that server's webhook worker delivers
// approval.requested/approval.decided to a real loopback receiver.
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReplayGuard, verifyWebhook } from '../../examples/webhook-receiver/verify.js';
import { OPERATOR_TENANT } from '../../host/api/routes/metrics.js';
import { createApiToken } from '../../host/state/apiTokens.js';
import { APPROVAL_OUTCOMES, approvalStats, type BindingApprovalStats } from '../../host/state/approvalStats.js';
import { listApprovals } from '../../host/state/approvals.js';
import { paddock } from '../helpers/cli.js';
import { chatEvent, FIXTURE_RUNNERS, tempHost } from '../helpers/host.js';
import { parseExposition, seriesOf, valueOf } from '../helpers/promText.js';
import { startServe, type ServeChild } from '../helpers/serve.js';
import { webhookTarget } from '../helpers/webhookTarget.js';
import { pendingApproval } from '../helpers/approvals.js';

const host = tempHost({ limits: { wallClockMs: 60_000 } });
let serve: ServeChild;
let admin = '';
const approvalsHook = { id: '', secret: '' };
let approvalsTarget: Awaited<ReturnType<typeof webhookTarget>>;
let runsTarget: Awaited<ReturnType<typeof webhookTarget>>;

interface Ask {
  effect: string;
  target: string;
  summary: string;
  scope?: 'once' | 'run' | 'session';
}
interface Answer {
  decision: 'approved' | 'denied';
  decidedBy: string;
  grantId?: string;
}

async function start(bot: string, asks: Ask[], conversation = `c-${Math.random()}`) {
  const ticket = await host.dispatcher.dispatch(
    chatEvent({ bot, text: JSON.stringify(asks), conversation: { id: conversation } }),
  );
  if (ticket.status === 'duplicate') throw new Error('duplicate');
  return {
    runId: ticket.runId,
    done: ticket.done,
    answers: async () => {
      const o = await ticket.done;
      expect(o.status, o.reason).toBe('completed');
      return JSON.parse((o.result?.output?.parts[0] as { text: string }).text) as Answer[];
    },
  };
}

/** The run's next pending approval (test/helpers/approvals.ts). */
const pendingOf = (runId: string) => pendingApproval(host.store, runId);
const cli = async (args: string[]) => {
  const r = await paddock(args, { dataDir: host.dataDir, env: { USER: 'ada' } });
  expect(r.exitCode, r.stderr).toBe(0);
  return r;
};

const grants: string[] = [];

beforeAll(async () => {
  const binding = (id: string, over: Record<string, unknown> = {}) => ({
    id,
    runner: 'asks-for-approval',
    route: { bot: id },
    sandbox: 'process',
    grants: { approval: true },
    approvalPolicy: 'ask',
    ...over,
  });
  host.apply({
    bindings: [
      binding('tuned', {
        policy: [
          { effect: 'exec', match: { command: 'make deploy-docs' }, decision: 'deny', why: 'manual' },
          { effect: 'exec', match: { command: 'npm test' }, decision: 'allow' },
        ],
      }),
      binding('hasty', { approvalTimeoutMs: 1_000 }),
    ],
  });
  admin = createApiToken(host.store, { tenant: OPERATOR_TENANT, role: 'admin', by: 'user:test' }).token;
  approvalsTarget = await webhookTarget();
  runsTarget = await webhookTarget();
  serve = await startServe(host.dataDir, [], { PADDOCK_RUNNER_DIRS: FIXTURE_RUNNERS });
  const register = async (url: string, events: string[]) => {
    const r = await fetch(`${serve.url}/v1/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url, events }),
    });
    expect(r.status).toBe(201);
    return (await r.json()) as { id: string; secret: string };
  };
  Object.assign(approvalsHook, await register(approvalsTarget.url, ['approval.requested', 'approval.decided']));
  await register(runsTarget.url, ['run.ended']);

  // Answered at once by the policy (default, rule allow, rule deny); then an ask approved with a session grant.
  const first = await start(
    'tuned',
    [
      { effect: 'fs.read', target: 'src/a.ts', summary: 'read' },
      { effect: 'exec', target: 'npm test', summary: 'test' },
      { effect: 'exec', target: 'make deploy-docs', summary: 'deploy' },
      { effect: 'exec', target: 'make lint', summary: 'lint', scope: 'session' },
    ],
    'g1',
  );
  await cli(['approvals', 'approve', (await pendingOf(first.runId)).id, '--lifetime', 'session']);
  const answers = await first.answers();
  expect(answers.map((a) => a.decidedBy)).toEqual(['host default', 'binding rule 2', 'binding rule 1', 'user:ada']);
  grants.push(answers[3]!.grantId!);
  // The grant allows the next two asks of the session, then is revoked: revoked after use.
  const lint = { effect: 'exec', target: 'make lint', summary: 'lint', scope: 'session' as const };
  const second = await (await start('tuned', [lint, lint], 'g1')).answers();
  expect(second.map((a) => a.decidedBy)).toEqual([`grant ${grants[0]}`, `grant ${grants[0]}`]);
  await cli(['grants', 'revoke', grants[0]!]);
  // A grant revoked before it allowed anything.
  const third = await start('tuned', [{ effect: 'exec', target: 'make fmt', summary: 'fmt', scope: 'session' }], 'g2');
  await cli(['approvals', 'approve', (await pendingOf(third.runId)).id, '--lifetime', 'session']);
  grants.push((await third.answers())[0]!.grantId!);
  await cli(['grants', 'revoke', grants[1]!]);
  // Denied by a person; voided by a cancel; expired.
  const fourth = await start('tuned', [{ effect: 'exec', target: 'rm -rf build', summary: 'clean' }]);
  await cli(['approvals', 'deny', (await pendingOf(fourth.runId)).id, '--reason', 'keep it']);
  expect((await fourth.answers())[0]).toMatchObject({ decision: 'denied' });
  const fifth = await start('tuned', [{ effect: 'exec', target: 'make publish-site', summary: 'publish' }]);
  await pendingOf(fifth.runId);
  host.dispatcher.cancel(fifth.runId, 'test cancel');
  expect((await fifth.done).status).toBe('cancelled');
  const sixth = await start('hasty', [{ effect: 'exec', target: 'make x', summary: 'x' }]);
  expect((await sixth.answers())[0]).toMatchObject({ decision: 'denied', decidedBy: 'host' });
}, 120_000);

afterAll(async () => {
  await serve?.stop();
  await approvalsTarget?.close();
  await runsTarget?.close();
  await host.close();
  rmSync(host.dataDir, { recursive: true, force: true });
});

const expected = {
  tuned: {
    outcomes: {
      asked: 4,
      approved: 2,
      denied: 1,
      expired: 0,
      void: 1,
      auto_allowed_by_grant: 2,
      allowed_by_policy: 2,
      denied_by_policy: 1,
    },
    pending: 0,
    grantsRevoked: 2,
    grantsRevokedAfterUse: 1,
  },
  hasty: {
    outcomes: {
      asked: 1,
      approved: 0,
      denied: 0,
      expired: 1,
      void: 0,
      auto_allowed_by_grant: 0,
      allowed_by_policy: 0,
      denied_by_policy: 0,
    },
    pending: 0,
    grantsRevoked: 0,
    grantsRevokedAfterUse: 0,
  },
};

/** The median of a person's decision times of a binding, from the approval rows themselves. */
function medianOf(bindingId: string): number {
  const ms = listApprovals(host.store, { limit: 100 })
    .filter((a) => a.bindingId === bindingId && (a.status === 'approved' || a.status === 'denied'))
    .map((a) => Date.parse(a.decidedAt!) - Date.parse(a.createdAt))
    .sort((a, b) => a - b);
  const mid = Math.floor(ms.length / 2);
  return ms.length % 2 === 1 ? ms[mid]! : Math.round((ms[mid - 1]! + ms[mid]!) / 2);
}

describe('approval statistics from the store', () => {
  it('counts each binding: asked, decided by a person, expired, void, answered by policy or grant', () => {
    const stats = approvalStats(host.store);
    expect(stats.map((s) => `${s.tenant}/${s.bindingId}`)).toEqual(['default/hasty', 'default/tuned']);
    const [hasty, tuned] = stats as [BindingApprovalStats, BindingApprovalStats];
    expect(tuned).toMatchObject(expected.tuned);
    expect(hasty).toMatchObject({ ...expected.hasty, medianDecisionMs: null });
    expect(tuned.medianDecisionMs).toBe(medianOf('tuned'));
    expect(approvalStats(host.store, { bindingId: 'hasty' })).toEqual([hasty]);
    expect(approvalStats(host.store, { tenant: 'beta' })).toEqual([]);
    expect(approvalStats(host.store, { since: new Date(Date.now() + 60_000).toISOString() })).toEqual([]);
  });

  it('`paddock approvals stats` prints the same figures (JSON and text); --since, --binding filter', async () => {
    const json = await cli(['approvals', 'stats', '--json']);
    expect(JSON.parse(json.stdout)).toEqual(approvalStats(host.store));
    const text = (await cli(['approvals', 'stats', '--binding', 'tuned'])).stdout;
    expect(text).toContain('default/tuned');
    expect(text).not.toContain('hasty');
    expect(text).toContain('asked 4: approved 2 · denied 1 · expired 0 · void 1 · pending 0');
    expect(text).toContain('allowed by policy 2 · denied by policy 1 · auto-allowed by a grant 2');
    expect(text).toContain('grants revoked 2 (after use 1)');
    const later = await cli(['approvals', 'stats', '--since', new Date(Date.now() + 60_000).toISOString()]);
    expect(later.stdout).toMatch(/^no approvals recorded since /);
    const bad = await paddock(['approvals', 'stats', '--since', 'yesterday'], { dataDir: host.dataDir });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain('--since must be an ISO 8601 UTC instant');
    const help = await paddock(['approvals', 'stats', '--help'], { dataDir: host.dataDir });
    expect(help.exitCode).toBe(0);
    expect(help.stdout).toContain('--since <iso>');
  });
});

describe('approval metrics and webhooks of a real `paddock serve`', () => {
  it('GET /metrics: paddock_approvals_total and grants revoked after use, per binding, as the store says', async () => {
    const res = await fetch(`${serve.url}/metrics`, { headers: { authorization: `Bearer ${admin}` } });
    expect(res.status).toBe(200);
    const e = parseExposition(await res.text());
    for (const [binding, want] of Object.entries(expected)) {
      for (const outcome of APPROVAL_OUTCOMES)
        expect(valueOf(e, 'paddock_approvals_total', { binding, outcome }), `${binding} ${outcome}`).toBe(
          want.outcomes[outcome],
        );
      expect(valueOf(e, 'paddock_grants_revoked_after_use_total', { binding })).toBe(want.grantsRevokedAfterUse);
    }
    expect(seriesOf(e, 'paddock_approvals_total')).toHaveLength(2 * APPROVAL_OUTCOMES.length);
    expect(seriesOf(e, 'paddock_grants_revoked_after_use_total')).toHaveLength(2);
  });

  it('delivers approval.requested and .decided, signed, with what an approver needs; nothing else', async () => {
    const asked = listApprovals(host.store, { limit: 100 });
    expect(asked).toHaveLength(5);
    await approvalsTarget.arrived(2 * asked.length);
    const bodies = approvalsTarget.received.map((r) => {
      const verdict = verifyWebhook({
        secret: approvalsHook.secret,
        headers: r.headers,
        body: r.body,
        guard: new ReplayGuard(),
      });
      expect(verdict.ok).toBe(true);
      return JSON.parse(r.body.toString()) as Record<string, unknown>;
    });
    expect(bodies).toHaveLength(2 * asked.length);
    for (const a of asked) {
      const about = bodies.filter((b) => b.approvalId === a.id);
      expect(about.map((b) => b.type).sort()).toEqual(['approval.decided', 'approval.requested']);
      const requested = about.find((b) => b.type === 'approval.requested')!;
      expect(requested).toMatchObject({
        tenant: a.tenant,
        runId: a.runId,
        sessionId: a.sessionId,
        bindingId: a.bindingId,
        effect: a.effect,
        target: a.target,
        summary: a.summary,
        risk: a.risk,
        requestedLifetime: a.requestedLifetime,
        expiresAt: a.expiresAt,
        at: a.createdAt,
      });
      expect(requested.decision).toBeUndefined();
      const decided = about.find((b) => b.type === 'approval.decided')!;
      expect(decided.decision).toEqual({
        status: a.status,
        decidedAt: a.decidedAt,
        decidedBy: a.decidedBy,
        reason: a.reason,
        grantId: a.grantId,
      });
    }
    // The receiver of run ends hears only run ends.
    await runsTarget.arrived(1);
    for (const r of runsTarget.received) expect(JSON.parse(r.body.toString())).toMatchObject({ type: 'run.ended' });
  });
});
