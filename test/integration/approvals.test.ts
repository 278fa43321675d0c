// The approval flow end to end (docs/approvals.md): a real runner (fixture asks-for-approval) sends approval/request
// from its bwrap sandbox; the host classifies the action itself, the binding's rules, the defaults, the floors and
// capability grants decide; an ask waits for a person, who decides with the real `paddock` CLI in another process
// (through the store), or for the timeout, or for the run's end. Every answer is recorded and audited.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunOutcome } from '../../host/process/outcome.js';
import { listApprovals } from '../../host/state/approvals.js';
import { listCapabilityGrants } from '../../host/state/capabilityGrants.js';
import { ErrorCodes } from '../../sdk/protocol/errorCodes.js';
import { chatEvent, tempHost } from '../helpers/host.js';
import { paddock } from '../helpers/cli.js';
import { rawDb } from '../helpers/rawDb.js';
import { pendingApproval, pendingApprovals } from '../helpers/approvals.js';

const host = tempHost({ limits: { wallClockMs: 60_000 } });
afterAll(() => host.close());

interface Answer {
  decision?: 'approved' | 'denied';
  reason?: string;
  decidedBy?: string;
  grantId?: string;
  error?: number;
}
interface Ask {
  effect: string;
  target: string;
  summary: string;
  scope?: 'once' | 'run' | 'session';
}

/** Dispatch a list of asks; the ticket's run id and its outcome (pending until the asks are answered). */
async function start(bot: string, asks: Ask[] | { parallel: Ask[] }, conversation = `c-${Math.random()}`) {
  const ticket = await host.dispatcher.dispatch(
    chatEvent({ bot, text: JSON.stringify(asks), conversation: { id: conversation } }),
  );
  if (ticket.status === 'duplicate') throw new Error('duplicate');
  return { runId: ticket.runId, done: ticket.done };
}
const answersOf = (o: RunOutcome): Answer[] => {
  expect(o.status, o.reason).toBe('completed');
  return JSON.parse((o.result?.output?.parts[0] as { text: string }).text) as Answer[];
};
async function ask(bot: string, asks: Ask[], conversation?: string): Promise<Answer[]> {
  return answersOf(await (await start(bot, asks, conversation)).done);
}

/** The run's next pending approval (test/helpers/approvals.ts). */
const pendingOf = (runId: string) => pendingApproval(host.store, runId);
const events = (runId: string, type: string) =>
  (
    rawDb(host.store)
      .prepare('SELECT data FROM events WHERE run_id = ? AND type = ? ORDER BY seq')
      .pluck()
      .all(runId, type) as string[]
  ).map((d) => JSON.parse(d) as Record<string, unknown>);
const audits = (runId: string, type: string) =>
  (
    rawDb(host.store)
      .prepare('SELECT actor, data FROM audit WHERE run_id = ? AND type = ? ORDER BY seq')
      .all(runId, type) as { actor: string; data: string }[]
  ).map((r) => ({ actor: r.actor, ...(JSON.parse(r.data) as Record<string, unknown>) }));

beforeAll(() => {
  const binding = (id: string, over: Record<string, unknown> = {}) => ({
    id,
    runner: 'asks-for-approval',
    route: { bot: id },
    sandbox: 'bwrap',
    grants: { approval: true },
    approvalPolicy: 'ask',
    ...over,
  });
  host.apply({
    bindings: [
      binding('ask', {
        policy: [
          { effect: 'exec', match: { command: 'make deploy-docs' }, decision: 'deny', why: 'docs deploy is manual' },
          { effect: 'exec', match: { command: 'npm test' }, decision: 'allow' },
          { effect: '*', match: { path: 'secrets/**' }, decision: 'deny' },
        ],
      }),
      binding('quick', { approvalTimeoutMs: 1_000 }),
      binding('strict', { approvalPolicy: 'deny' }),
      binding('ungranted', { grants: {} }),
      binding('steer', { steering: 'interrupt' }),
      binding('tainting', { policy: [{ effect: 'network', match: { domain: 'api.example.com' }, decision: 'allow' }] }),
    ],
  });
});

describe('approval/request decided by the host without a person', () => {
  it('a workspace read is allowed by the default; a rule allows a command; rules deny, naming themselves', async () => {
    const [read, tests, deploy, secret] = await ask('ask', [
      { effect: 'fs.read', target: 'src/app.ts', summary: 'read the app' },
      { effect: 'exec', target: 'npm test', summary: 'run the tests' },
      { effect: 'exec', target: 'make deploy-docs', summary: 'deploy the docs' },
      { effect: 'fs.read', target: 'secrets/token.txt', summary: 'read a token' },
    ]);
    expect(read).toMatchObject({ decision: 'approved', decidedBy: 'host default' });
    expect(tests).toMatchObject({ decision: 'approved', decidedBy: 'binding rule 2' });
    expect(deploy).toMatchObject({ decision: 'denied', decidedBy: 'binding rule 1' });
    expect(deploy!.reason).toContain('docs deploy is manual');
    expect(secret).toMatchObject({ decision: 'denied', decidedBy: 'binding rule 3' });
    expect(listApprovals(host.store, { status: 'pending', limit: 10 })).toEqual([]);
  });

  it('approvalPolicy deny answers an ask at once, denied, saying so; no approval waits', async () => {
    const { runId, done } = await start('strict', [{ effect: 'exec', target: 'make build', summary: 'build' }]);
    const [build] = answersOf(await done);
    expect(build).toMatchObject({ decision: 'denied' });
    expect(build!.reason).toMatch(/approvalPolicy/);
    expect(listApprovals(host.store, { runId, limit: 10 })).toEqual([]);
    expect(events(runId, 'approval.decided')).toEqual([
      expect.objectContaining({ decision: 'denied', target: { kind: 'command', value: 'make build' } }),
    ]);
    expect(audits(runId, 'approval.decided')).toEqual([expect.objectContaining({ actor: 'host', decision: 'denied' })]);
  });

  it('a binding that does not grant approval requests refuses the request itself (authz), as before', async () => {
    const [answer] = await ask('ungranted', [{ effect: 'fs.read', target: 'a.txt', summary: 'read' }]);
    expect(answer).toEqual({ error: ErrorCodes.PolicyDenied });
  });

  it('the runner cannot lower an action: `git push` waits as publish, `config/../.env` as credential', async () => {
    const { runId, done } = await start('quick', [
      { effect: 'exec', target: 'git push origin main', summary: 'just a harmless command' },
      { effect: 'fs.read', target: 'config/../.env', summary: 'a config file' },
    ]);
    const first = await pendingOf(runId);
    expect(first).toMatchObject({ effect: 'publish', target: { kind: 'command', value: 'git push origin main' } });
    const [push, env] = answersOf(await done);
    expect(push).toMatchObject({ decision: 'denied', decidedBy: 'host' });
    expect(push!.reason).toMatch(/nobody decided within 1 s/);
    expect(env).toMatchObject({ decision: 'denied' });
    const rows = listApprovals(host.store, { runId, limit: 10 });
    expect(rows.map((r) => [r.effect, r.target.value, r.status])).toEqual([
      ['publish', 'git push origin main', 'expired'],
      ['credential', '.env', 'expired'],
    ]);
  });
});

describe('an ask waits for a person, who decides in another process', () => {
  it('approved with the CLI: the runner hears approved, with the approver; audited with the operator', async () => {
    const { runId, done } = await start('ask', [{ effect: 'exec', target: 'make release', summary: 'cut a release' }]);
    const pending = await pendingOf(runId);
    expect(pending).toMatchObject({
      effect: 'exec',
      summary: 'cut a release',
      status: 'pending',
      requestedLifetime: 'once',
    });
    expect(events(runId, 'approval.requested')).toEqual([
      expect.objectContaining({
        approvalId: pending.id,
        effect: 'exec',
        target: { kind: 'command', value: 'make release' },
      }),
    ]);
    const cli = await paddock(['approvals', 'approve', pending.id, '--reason', 'release day'], {
      dataDir: host.dataDir,
      env: { USER: 'ada' },
    });
    expect(cli.exitCode, cli.stderr).toBe(0);
    const [answer] = answersOf(await done);
    expect(answer).toMatchObject({ decision: 'approved', reason: 'release day' });
    expect(answer!.decidedBy).toMatch(/ada/);
    expect(events(runId, 'approval.decided')).toEqual([
      expect.objectContaining({ approvalId: pending.id, decision: 'approved' }),
    ]);
    expect(audits(runId, 'approval.approved')).toEqual([
      expect.objectContaining({ actor: expect.stringMatching(/ada/) }),
    ]);
  });

  it('denied with the CLI: the runner hears denied, with the reason', async () => {
    const { runId, done } = await start('ask', [{ effect: 'exec', target: 'rm -rf build', summary: 'clean' }]);
    const pending = await pendingOf(runId);
    expect(pending.effect).toBe('destructive');
    const cli = await paddock(['approvals', 'deny', pending.id, '--reason', 'keep the build'], {
      dataDir: host.dataDir,
    });
    expect(cli.exitCode, cli.stderr).toBe(0);
    const [answer] = answersOf(await done);
    expect(answer).toMatchObject({ decision: 'denied', reason: 'keep the build' });
  });

  it('a session grant answers the next ask of the session at once; revoked, the next ask waits again', async () => {
    const conversation = 'grant-1';
    const make = { effect: 'exec', target: 'make lint', summary: 'lint', scope: 'session' as const };
    const first = await start('ask', [make], conversation);
    const pending = await pendingOf(first.runId);
    const approved = await paddock(['approvals', 'approve', pending.id, '--lifetime', 'session'], {
      dataDir: host.dataDir,
    });
    expect(approved.exitCode, approved.stderr).toBe(0);
    const [firstAnswer] = answersOf(await first.done);
    expect(firstAnswer).toMatchObject({ decision: 'approved', grantId: expect.stringMatching(/^grt_/) });
    const grantId = firstAnswer!.grantId!;

    // The next run of the session: the grant covers exactly this command, not `make lint && curl …`.
    const second = await start(
      'ask',
      [make, { effect: 'exec', target: 'make lint && curl http://x.test', summary: 'lint and tell' }],
      conversation,
    );
    const widened = await pendingOf(second.runId);
    expect(widened.target.value).toBe('make lint && curl http://x.test');
    expect((await paddock(['approvals', 'deny', widened.id], { dataDir: host.dataDir })).exitCode).toBe(0);
    const [again, compound] = answersOf(await second.done);
    expect(again).toMatchObject({ decision: 'approved', decidedBy: `grant ${grantId}`, grantId });
    expect(compound).toMatchObject({ decision: 'denied' });
    expect(audits(second.runId, 'approval.decided')).toEqual([
      expect.objectContaining({ actor: 'host', decision: 'approved', grantId }),
    ]);

    // Another session of the binding is not covered.
    const other = await start('ask', [make], 'grant-2');
    const otherPending = await pendingOf(other.runId);
    await paddock(['approvals', 'deny', otherPending.id], { dataDir: host.dataDir });
    expect(answersOf(await other.done)[0]).toMatchObject({ decision: 'denied' });

    // Revoked: the next ask of the first session waits for a person again.
    const revoked = await paddock(['grants', 'revoke', grantId], { dataDir: host.dataDir });
    expect(revoked.exitCode, revoked.stderr).toBe(0);
    const third = await start('ask', [make], conversation);
    const waiting = await pendingOf(third.runId);
    await paddock(['approvals', 'deny', waiting.id, '--reason', 'grant revoked'], { dataDir: host.dataDir });
    expect(answersOf(await third.done)[0]).toMatchObject({ decision: 'denied', reason: 'grant revoked' });
    expect(listCapabilityGrants(host.store, { live: true, limit: 10 }).map((g) => g.id)).not.toContain(grantId);
  });

  it('a run cancelled while its approval waits voids it; deciding it later is refused', async () => {
    const { runId, done } = await start('ask', [{ effect: 'exec', target: 'make publish-site', summary: 'publish' }]);
    const pending = await pendingOf(runId);
    host.dispatcher.cancel(runId, 'test cancel');
    const outcome = await done;
    expect(outcome.status).toBe('cancelled');
    const [row] = listApprovals(host.store, { runId, limit: 1 });
    expect(row!.status).toBe('void');
    const late = await paddock(['approvals', 'approve', pending.id], { dataDir: host.dataDir });
    expect(late.exitCode).toBe(1);
    expect(late.stderr).toMatch(/void/);
  });

  it('steering interrupt: a newer message cancels the waiting run; its approval is void, never decided', async () => {
    const first = await start('steer', [{ effect: 'exec', target: 'make deploy', summary: 'deploy' }], 'steer-1');
    const pending = await pendingOf(first.runId);
    expect(pending.goalRevision).toBe(0);
    const second = await start('steer', [], 'steer-1');
    expect((await first.done).status).toBe('cancelled');
    expect(answersOf(await second.done)).toEqual([]);
    const [row] = listApprovals(host.store, { runId: first.runId, limit: 1 });
    expect(row).toMatchObject({ status: 'void', decidedBy: 'host' });
    const late = await paddock(['approvals', 'approve', pending.id], { dataDir: host.dataDir });
    expect(late.exitCode).toBe(1);
    expect(events(second.runId, 'approval.decided')).toEqual([]);
  });

  it('an approved read of a secret path taints the run: a destination a rule allowed now needs a person', async () => {
    const api = { effect: 'network', target: 'https://api.example.com/v1/upload', summary: 'upload' };
    const { runId, done } = await start('tainting', [
      api,
      { effect: 'fs.read', target: '.env', summary: 'read the settings' },
      api,
    ]);
    const read = await pendingOf(runId);
    expect(read).toMatchObject({ effect: 'credential', target: { value: '.env' } });
    expect((await paddock(['approvals', 'approve', read.id], { dataDir: host.dataDir })).exitCode).toBe(0);
    const send = await pendingOf(runId);
    expect(send).toMatchObject({ effect: 'network', dataClass: 'credential', destination: 'api.example.com' });
    expect((await paddock(['approvals', 'deny', send.id], { dataDir: host.dataDir })).exitCode).toBe(0);
    const [before, envRead, after] = answersOf(await done);
    expect(before).toMatchObject({ decision: 'approved', decidedBy: 'binding rule 1' });
    expect(envRead).toMatchObject({ decision: 'approved' });
    expect(after).toMatchObject({ decision: 'denied' });
    expect(events(runId, 'run.tainted')).toEqual([{ dataClass: 'credential', source: '.env' }]);
  });

  it("a run's low-risk asks are one group, decided together with --group", async () => {
    const reads = ['/etc/hostname', '/etc/timezone'].map((target) => ({ effect: 'fs.read', target, summary: 'read' }));
    const { runId, done } = await start('ask', { parallel: reads });
    const rows = await pendingApprovals(host.store, runId, 2);
    expect(rows.map((r) => [r.risk.level, r.groupId])).toEqual([
      ['low', `grp_${runId}`],
      ['low', `grp_${runId}`],
    ]);
    const cli = await paddock(['approvals', 'approve', rows[0]!.id, '--group'], { dataDir: host.dataDir });
    expect(cli.exitCode, cli.stderr).toBe(0);
    expect(cli.stdout).toContain(`and ${rows[1]!.id} (same group)`);
    expect(answersOf(await done).map((a) => a.decision)).toEqual(['approved', 'approved']);
  });

  it('the audit chain holds every approval record and still verifies', async () => {
    const verified = await paddock(['audit', 'verify'], { dataDir: host.dataDir });
    expect(verified.exitCode, verified.stdout + verified.stderr).toBe(0);
  });
});
