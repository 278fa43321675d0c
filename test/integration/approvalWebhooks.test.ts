// An approval's webhook is queued when the run's host commits `approval.requested`, not by the next sweep: a worker
// in the run's own process, whose poll is an hour, delivers the ask to a real loopback receiver while it is still
// pending, and the decision when the run records it (the decision itself is made by the CLI in another process).
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebhook, startWebhookDelivery, type WebhookWorker } from '../../host/api/webhooks/index.js';
import { approvalById } from '../../host/state/approvals.js';
import { paddock } from '../helpers/cli.js';
import { chatEvent, tempHost } from '../helpers/host.js';
import { webhookTarget } from '../helpers/webhookTarget.js';
import { pendingApproval } from '../helpers/approvals.js';

const host = tempHost({ limits: { wallClockMs: 60_000 } });
let target: Awaited<ReturnType<typeof webhookTarget>>;
let worker: WebhookWorker;

beforeAll(async () => {
  host.apply({
    bindings: [
      {
        id: 'paged',
        runner: 'asks-for-approval',
        route: { bot: 'paged' },
        sandbox: 'process',
        grants: { approval: true },
        approvalPolicy: 'ask',
      },
    ],
  });
  target = await webhookTarget();
  createWebhook(host.store, {
    tenant: 'default',
    url: target.url,
    events: ['approval.requested', 'approval.decided'],
    actor: 'user:test',
  });
  worker = startWebhookDelivery(host.store, { pollMs: 3_600_000 });
});
afterAll(async () => {
  await worker?.stop();
  await target?.close();
  await host.close();
  rmSync(host.dataDir, { recursive: true, force: true });
});

/** The run's next pending approval (test/helpers/approvals.ts). */
const pendingOf = (runId: string) => pendingApproval(host.store, runId);

describe('approval webhooks queued from this process', () => {
  it('the ask reaches the receiver while it waits; the decision follows when the run records it', async () => {
    const asks = [
      { effect: 'fs.read', target: 'src/a.ts', summary: 'read (answered by the policy: not sent)' },
      { effect: 'exec', target: 'make release', summary: 'cut a release' },
    ];
    const ticket = await host.dispatcher.dispatch(
      chatEvent({ bot: 'paged', text: JSON.stringify(asks), conversation: { id: 'c1' } }),
    );
    if (ticket.status === 'duplicate') throw new Error('duplicate');
    const pending = await pendingOf(ticket.runId);
    await target.arrived(1);
    // Still pending when it arrived: nobody decided yet, and the worker's poll is an hour away.
    expect(approvalById(host.store, pending.id)!.status).toBe('pending');
    const asked = JSON.parse(target.received[0]!.body.toString()) as Record<string, unknown>;
    expect(asked).toMatchObject({
      type: 'approval.requested',
      approvalId: pending.id,
      runId: ticket.runId,
      bindingId: 'paged',
      effect: 'exec',
      target: { kind: 'command', value: 'make release' },
      summary: 'cut a release',
      expiresAt: pending.expiresAt,
    });

    const denied = await paddock(['approvals', 'deny', pending.id, '--reason', 'not today'], {
      dataDir: host.dataDir,
    });
    expect(denied.exitCode, denied.stderr).toBe(0);
    expect((await ticket.done).status).toBe('completed');
    await target.arrived(2);
    const decided = JSON.parse(target.received[1]!.body.toString()) as Record<string, unknown>;
    expect(decided).toMatchObject({
      type: 'approval.decided',
      approvalId: pending.id,
      decision: { status: 'denied', reason: 'not today', grantId: null },
    });
    expect(target.received).toHaveLength(2);
  });
});
