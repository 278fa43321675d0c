/** Webhook delivery (docs/http-api.md, "Webhooks"): what `paddock serve` and its routes use. */
export { DEFAULT_WEBHOOK_ALLOW, parseWebhookAllow, type WebhookAllowList } from './allowList.js';
export { checkWebhookUrl, DestinationRefused, resolveDestination, type Resolve } from './destination.js';
export {
  createWebhook,
  listDeliveries,
  listWebhooks,
  removeWebhook,
  WEBHOOK_EVENTS,
  type CreatedWebhook,
} from './registry.js';
export { signatureOf } from './send.js';
export {
  defaultBackoffMs,
  startWebhookDelivery,
  WebhookWorker,
  type AttemptResult,
  type WebhookWorkerOptions,
} from './worker.js';
