/** Queue deliveries for ended runs: at once from this process's commits, and by a sweep for everyone else's. */
import { randomBytes } from 'node:crypto';
import type { Store } from '../../state/store.js';
import { tenantOfSession } from '../../state/tenancy.js';
import {
  activeWebhooks,
  advanceSweep,
  hasDelivery,
  insertDelivery,
  runsEndedSince,
  type ActiveWebhook,
} from '../../state/webhooks.js';
import { replyText, webhookBody } from './body.js';

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
    (w) => w.tenant === tenant && w.createdAt <= run.endedAt! && !hasDelivery(store, w.id, run.id),
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

/**
 * Queue deliveries of every run that ended since each registration's cursor, whichever process ended it
 * (a CLI on the same data folder, a host that crashed before queueing), then move the cursors on.
 */
export function sweepEndedRuns(store: Store, now = Date.now()): number {
  const webhooks = activeWebhooks(store);
  if (webhooks.length === 0) return 0;
  const since = webhooks.map((w) => w.sweptTo).sort()[0]!;
  let queued = 0;
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
