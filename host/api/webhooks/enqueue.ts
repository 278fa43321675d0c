/**
 * Queue deliveries for ended runs and for approvals asked and decided: at once from this process's commits, and by a
 * sweep for everyone else's.
 */
import { randomBytes } from 'node:crypto';
import type { Store } from '../../state/store.js';
import { tenantOfSession } from '../../state/tenancy.js';
import {
  activeWebhooks,
  advanceSweep,
  approvalForWebhook,
  approvalsSince,
  hasDelivery,
  insertDelivery,
  runsEndedSince,
  type ActiveWebhook,
  type ApprovalForWebhook,
} from '../../state/webhooks.js';
import { approvalWebhookBody, replyText, webhookBody } from './body.js';

/**
 * How far behind "now" the sweep cursor stays: a run's end is stamped inside its transaction and
 * committed a moment later, so a run stamped just before a sweep may become visible just after it.
 */
export const SWEEP_MARGIN_MS = 60_000;
const PAGE = 500;

/** Queue a run's deliveries for `webhooks` (those of its tenant registered before it ended). Returns how many. */
function enqueueFor(store: Store, runId: string, webhooks: ActiveWebhook[], now: number): number {
  const run = store.run(runId);
  if (!run?.endedAt) return 0;
  const tenant = tenantOfSession(store, run.sessionId);
  const due = webhooks.filter(
    (w) =>
      w.tenant === tenant &&
      (w.events.includes('run.ended') || w.events.includes('reply')) &&
      w.createdAt <= run.endedAt! &&
      !hasDelivery(store, w.id, run.id),
  );
  if (due.length === 0) return 0;
  const text = replyText(store, run);
  let queued = 0;
  for (const w of due) {
    // `reply` alone: only runs that answered something; `run.ended`: every run that ended.
    if (!w.events.includes('run.ended') && text === '') continue;
    const id = `whd_${randomBytes(10).toString('hex')}`;
    const body = JSON.stringify(webhookBody(id, tenant!, run, text));
    const at = new Date(now).toISOString();
    if (
      insertDelivery(store, { id, webhookId: w.id, tenant: tenant!, runId: run.id, type: 'run.ended', body, at }, now)
    )
      queued += 1;
  }
  return queued;
}

/** Queue the deliveries of one ended run (called when this process committed its end). */
export function enqueueRun(store: Store, runId: string, now = Date.now()): number {
  return enqueueFor(store, runId, activeWebhooks(store), now);
}

/** What an approval delivery is about, and the time that decides which registrations get it. */
const APPROVAL_SUBJECT = {
  requested: { type: 'approval.requested', subject: (id: string) => id },
  decided: { type: 'approval.decided', subject: (id: string) => `${id}/decided` },
} as const;

/**
 * Queue an approval's `approval.requested` (or, once it is no longer pending, `approval.decided`) deliveries for
 * `webhooks` that subscribe to it: those of its tenant registered before it was asked (decided). Returns how many.
 */
function enqueueApprovalFor(
  store: Store,
  a: ApprovalForWebhook,
  what: 'requested' | 'decided',
  webhooks: ActiveWebhook[],
  now: number,
): number {
  const { type, subject } = APPROVAL_SUBJECT[what];
  const at = what === 'requested' ? a.createdAt : a.decidedAt;
  if (at === null || (what === 'decided' && a.status === 'pending')) return 0;
  let queued = 0;
  for (const w of webhooks) {
    if (w.tenant !== a.tenant || !w.events.includes(type) || w.createdAt > at) continue;
    if (hasDelivery(store, w.id, subject(a.id))) continue;
    const id = `whd_${randomBytes(10).toString('hex')}`;
    const body = JSON.stringify(approvalWebhookBody(id, type, a));
    const d = { id, webhookId: w.id, tenant: a.tenant, runId: a.runId, subject: subject(a.id), type, body };
    if (insertDelivery(store, { ...d, at: new Date(now).toISOString() }, now)) queued += 1;
  }
  return queued;
}

/** Queue the deliveries of one approval asked or decided (called when this process committed the event). */
export function enqueueApproval(
  store: Store,
  approvalId: string,
  what: 'requested' | 'decided',
  now = Date.now(),
): number {
  const approval = approvalForWebhook(store, approvalId);
  return approval ? enqueueApprovalFor(store, approval, what, activeWebhooks(store), now) : 0;
}

/** Queue deliveries of approvals asked and decided since `since` (the sweep's part for approvals). */
function sweepApprovals(store: Store, webhooks: ActiveWebhook[], since: string, now: number): number {
  let queued = 0;
  for (const what of ['requested', 'decided'] as const) {
    const type = APPROVAL_SUBJECT[what].type;
    const subscribed = webhooks.filter((w) => w.events.includes(type));
    if (subscribed.length === 0) continue;
    let after: { at: string; id: string } | undefined;
    for (;;) {
      const page = approvalsSince(store, what, since, after, PAGE);
      for (const a of page) {
        const open = subscribed.filter((w) => w.sweptTo <= a.at);
        if (open.length > 0) queued += enqueueApprovalFor(store, a, what, open, now);
      }
      if (page.length < PAGE) break;
      after = { at: page[page.length - 1]!.at, id: page[page.length - 1]!.id };
    }
  }
  return queued;
}

/**
 * Queue deliveries of every run that ended and every approval asked or decided since each registration's cursor,
 * whichever process did it (a CLI on the same data folder, a host that crashed before queueing), then move the
 * cursors on.
 */
export function sweepEndedRuns(store: Store, now = Date.now()): number {
  const webhooks = activeWebhooks(store);
  if (webhooks.length === 0) return 0;
  const since = webhooks.map((w) => w.sweptTo).sort()[0]!;
  let queued = sweepApprovals(store, webhooks, since, now);
  let after: { endedAt: string; id: string } | undefined;
  for (;;) {
    const page = runsEndedSince(store, since, after, PAGE);
    for (const run of page) {
      const open = webhooks.filter((w) => w.sweptTo <= run.endedAt);
      if (open.length > 0) queued += enqueueFor(store, run.id, open, now);
    }
    if (page.length < PAGE) break;
    after = page[page.length - 1];
  }
  const to = new Date(now - SWEEP_MARGIN_MS).toISOString();
  for (const w of webhooks) advanceSweep(store, w.id, to);
  return queued;
}
