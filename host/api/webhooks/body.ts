/** The JSON body of a webhook delivery: a run's outcome and its reply, as the session view tells them. */
import { foldAll } from '../../state/sessionView.js';
import type { RunRow, Store } from '../../state/store.js';

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
  const events = store.readEvents(run.sessionId).filter((e) => e.runId === run.id);
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
