/** What the webhook routes call: register, list, remove a tenant's webhooks and list their deliveries. */
import { createHash, randomBytes } from 'node:crypto';
import { HostError } from '../../errors.js';
import { clip } from '../../util/clip.js';
import type { Store } from '../../state/store.js';
import {
  attemptsOf,
  deliveriesOf,
  insertWebhook,
  markWebhookRemoved,
  webhookOf,
  webhooksOf,
  type AttemptRow,
  type DeliveryRow,
  type WebhookRow,
} from '../../state/webhooks.js';
import { checkWebhookUrl, DestinationRefused } from './destination.js';

/**
 * Event filters a registration may name: every ended run, only runs that replied something, an approval asked of a
 * person, and its decision (approved, denied, expired or void).
 */
export const WEBHOOK_EVENTS = ['run.ended', 'reply', 'approval.requested', 'approval.decided'] as const;
/** One event filter. */
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** A new registration as answered once: the only time its secret leaves the host. */
export interface CreatedWebhook extends WebhookRow {
  secret: string;
}

/** Register a webhook for `tenant` (audited without its secret). Bad input is INVALID_INPUT naming each field. */
export function createWebhook(
  store: Store,
  input: { tenant: string; url: string; events?: string[]; actor: string },
): CreatedWebhook {
  const errors: { path: string; message: string }[] = [];
  try {
    checkWebhookUrl(input.url);
  } catch (error) {
    if (!(error instanceof DestinationRefused)) throw error;
    errors.push({ path: 'url', message: error.message });
  }
  const events = input.events ?? ['run.ended'];
  if (events.length === 0) errors.push({ path: 'events', message: 'name at least one event' });
  events.forEach((e, i) => {
    if (!(WEBHOOK_EVENTS as readonly string[]).includes(e))
      errors.push({ path: `events[${i}]`, message: `"${clip(e, 40)}" is not one of ${WEBHOOK_EVENTS.join(', ')}` });
  });
  if (errors.length > 0)
    throw new HostError('INVALID_INPUT', errors.map((e) => `${e.path}: ${e.message}`).join('; '), { errors });
  const id = `whk_${randomBytes(8).toString('hex')}`;
  const secret = `whsec_${randomBytes(32).toString('base64url')}`;
  const at = new Date().toISOString();
  const unique = [...new Set(events)];
  insertWebhook(
    store,
    { id, tenant: input.tenant, url: input.url, events: unique, secret, createdBy: input.actor, at },
    {
      type: 'webhook.registered',
      actor: input.actor,
      data: { webhookId: id, tenant: input.tenant, ...auditedUrl(input.url), events: unique },
    },
  );
  return {
    id,
    tenant: input.tenant,
    url: input.url,
    events: unique,
    createdAt: at,
    createdBy: input.actor,
    removedAt: null,
    secret,
  };
}

/**
 * What the audit log keeps of a webhook URL: its origin and a digest of the whole URL. Receivers often carry a
 * credential in the path or query (`/services/T…/B…/<token>`, `?token=`), and the audit log is kept forever and
 * exported; the digest still lets an admin check which URL a record names.
 */
export function auditedUrl(url: string): { origin: string; urlSha256: string } {
  return { origin: new URL(url).origin, urlSha256: createHash('sha256').update(url).digest('hex') };
}

/** A tenant's active webhooks (no secrets). */
export function listWebhooks(store: Store, tenant: string): WebhookRow[] {
  return webhooksOf(store, tenant);
}

/** Remove a tenant's webhook: its pending deliveries fail, its secret is erased, the removal is audited. */
export function removeWebhook(store: Store, tenant: string, id: string, actor: string): void {
  const removed = markWebhookRemoved(store, tenant, id, new Date().toISOString(), {
    type: 'webhook.removed',
    actor,
    data: { webhookId: id, tenant },
  });
  if (!removed) throw new HostError('NOT_FOUND', `no webhook ${clip(id, 40)}`);
}

/** A tenant's webhook's deliveries, newest first, each with its attempts (another tenant's id: NOT_FOUND). */
export function listDeliveries(
  store: Store,
  tenant: string,
  id: string,
  limit = 100,
): (DeliveryRow & { log: AttemptRow[] })[] {
  if (!webhookOf(store, tenant, id)) throw new HostError('NOT_FOUND', `no webhook ${clip(id, 40)}`);
  return deliveriesOf(store, id, limit).map((d) => ({ ...d, log: attemptsOf(store, d.id) }));
}
