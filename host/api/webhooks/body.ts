/** The JSON body of a webhook delivery: a run's outcome and its reply, as the session view tells them. */
import type { StoredEvent } from '../../state/events.js';
import { foldAll } from '../../state/sessionView.js';
import { readEventsAfter } from '../../state/streamReads.js';
import type { RunRow, Store } from '../../state/store.js';
import type { ApprovalForWebhook } from '../../state/webhooks.js';

/** Characters of reply text a delivery carries; longer replies are cut and say so (`reply.truncated`). */
export const MAX_REPLY_CHARS = 256 * 1024;

/** The delivery body (docs/http-api.md, "Webhooks"). */
export interface WebhookBody {
  type: 'run.ended';
  deliveryId: string;
  tenant: string;
  runId: string;
  sessionId: string;
  bindingId: string | null;
  outcome: { status: string; reason: string | null };
  reply: { text: string; truncated?: true };
  at: string;
}

/**
 * A run's reply: its assistant lines of the session transcript (what `paddock sessions show` prints), in
 * order, joined by a blank line; the result's output when the run streamed nothing.
 */
export function replyText(store: Store, run: Pick<RunRow, 'id' | 'sessionId'>): string {
  // The run's own events (by run id, streamReads.ts), not its whole session's log.
  const events = readEventsAfter(store, { sessionId: run.sessionId, runId: run.id, afterSeq: 0, limit: 1_000_000 }).map(
    ({ dataJson, ...e }): StoredEvent => ({ ...e, data: JSON.parse(dataJson) as StoredEvent['data'] }),
  );
  return foldAll(run.sessionId, events)
    .transcript.filter((t) => t.role === 'assistant')
    .map((t) => t.text)
    .join('\n\n');
}

/** The body of one delivery of an ended run. */
export function webhookBody(deliveryId: string, tenant: string, run: RunRow, text: string): WebhookBody {
  const cut = text.length > MAX_REPLY_CHARS;
  return {
    type: 'run.ended',
    deliveryId,
    tenant,
    runId: run.id,
    sessionId: run.sessionId,
    bindingId: run.bindingId,
    outcome: { status: run.status, reason: run.reason },
    reply: cut ? { text: text.slice(0, MAX_REPLY_CHARS), truncated: true } : { text },
    at: run.endedAt ?? new Date().toISOString(),
  };
}

/** Characters of a runner's summary an approval delivery carries (the store keeps up to 2 000). */
export const MAX_SUMMARY_CHARS = 1_000;

/**
 * The body of an `approval.requested` or `approval.decided` delivery: what an approver needs to decide (or to learn
 * that it was decided). Target and summary are as the host stored them, already redacted; the summary is the
 * runner's own words (untrusted). Nothing else of the run is sent.
 */
export interface ApprovalWebhookBody {
  type: 'approval.requested' | 'approval.decided';
  deliveryId: string;
  tenant: string;
  approvalId: string;
  runId: string;
  sessionId: string;
  bindingId: string;
  effect: string;
  target: { kind: string; value: string };
  via: string;
  summary: string;
  risk: { score: number; level: string; reasons: string[] };
  requestedLifetime: string;
  goalRevision: number;
  createdAt: string;
  expiresAt: string;
  /** `approval.decided` only: how it ended, when, by whom (`host` for an expiry or a void), and the grant it left. */
  decision?: {
    status: string;
    decidedAt: string | null;
    decidedBy: string | null;
    reason: string | null;
    grantId: string | null;
  };
  /** When it was asked (`approval.requested`) or decided. */
  at: string;
}

/** The body of one delivery about an approval. */
export function approvalWebhookBody(
  deliveryId: string,
  type: ApprovalWebhookBody['type'],
  a: ApprovalForWebhook,
): ApprovalWebhookBody {
  return {
    type,
    deliveryId,
    tenant: a.tenant,
    approvalId: a.id,
    runId: a.runId,
    sessionId: a.sessionId,
    bindingId: a.bindingId,
    effect: a.effect,
    target: a.target,
    via: a.via,
    summary: a.summary.slice(0, MAX_SUMMARY_CHARS),
    risk: a.risk,
    requestedLifetime: a.requestedLifetime,
    goalRevision: a.goalRevision,
    createdAt: a.createdAt,
    expiresAt: a.expiresAt,
    ...(type === 'approval.decided'
      ? {
          decision: {
            status: a.status,
            decidedAt: a.decidedAt,
            decidedBy: a.decidedBy,
            reason: a.reason,
            grantId: a.grantId,
          },
        }
      : {}),
    at: type === 'approval.decided' ? (a.decidedAt ?? a.createdAt) : a.createdAt,
  };
}
