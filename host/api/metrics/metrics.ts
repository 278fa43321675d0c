import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { registerLiveHeap } from './liveHeap.js';
import type { Dispatcher, RefusalReason } from '../../dispatch/dispatcher.js';
import type { Gateway } from '../../gateway/gateway.js';
import type { ObservedCall } from '../../gateway/modelCall.js';
import { LIMIT_HITS } from '../../process/outcome.js';
import { claimedRunsTotal } from '../../state/claims.js';
import { waitingRunsTotal } from '../../state/dispatchLog.js';
import { Store } from '../../state/store.js';
import type { InjectionToken } from '../../di/container.js';
import { TOKENS } from '../../di/tokens.js';
import { registerApprovalMetrics } from './approvalMetrics.js';
import { CappedLabel, fixedLabel, looksLikeId, OTHER, ROUTE_PATTERN, statusLabel } from './labels.js';
import { feedRunMetrics } from './runFeed.js';

/** Every reason a dispatch refusal can carry (host/dispatch/dispatcher.ts RefusalReason, plus `event_too_large`). */
export const REFUSAL_REASONS = [
  'no_binding',
  'binding_disabled',
  'runner_unavailable',
  'runner_tampered',
  'sandbox_unavailable',
  'limits_unavailable',
  'config_invalid',
  'invalid_event',
  'event_too_large',
  'queue_full',
  'session_paused',
] as const;
// Fails to compile when the dispatcher gains a refusal reason this list does not name.
const _allReasons: Exclude<RefusalReason, (typeof REFUSAL_REASONS)[number]> extends never ? true : never = true;
void _allReasons;

/** How a webhook delivery attempt ended (host/api/webhooks: delivered, will be retried, given up). */
export const WEBHOOK_RESULTS = ['delivered', 'retry', 'failed'] as const;

/** Model providers a gateway call can name (host/bindings/schema.ts), and `none` for a call refused before one. */
const PROVIDERS = ['anthropic', 'openai', 'scripted', 'none'] as const;

/** What metrics are read from: a started host (its store, dispatcher and gateway), or a bare store. */
export type MetricsSource = Store | { store: Store; container?: { resolve<T>(token: InjectionToken<T>): T } };

/** Options of {@link createMetrics}. */
export interface MetricsOptions {
  /** Refusal source (default: the host's dispatcher, when the source is a started host). */
  dispatcher?: Pick<Dispatcher, 'observeRefusals'>;
  /** Model-call source (default: the host's gateway, when the source is a started host). */
  gateway?: Pick<Gateway, 'observeCalls'>;
  /** Distinct values a configuration-named label (binding, route) may take before the rest count as `other`. */
  maxLabelValues?: number;
  /** Node process default metrics on this registry (default true). */
  defaultMetrics?: boolean;
}

/** The metrics of one server: its own registry, the exposition, and the hooks the server calls. */
export interface Metrics {
  registry: Registry;
  /** The exposition's content type (Prometheus text 0.0.4). */
  contentType: string;
  /** The exposition text (gauges read from the store now). */
  render(): Promise<string>;
  /**
   * A route pattern the server registered (`/v1/runs/:id`): only declared patterns become `route` labels, so a
   * caller that passes a URL where a pattern belongs leaks nothing (anything undeclared counts as `other`).
   */
  declareRoute(pattern: string): void;
  /** One answered HTTP request: its route pattern (never the URL), status and duration. */
  httpRequest(route: string | undefined, status: number, seconds: number): void;
  /** An SSE stream opened (+1) or closed (-1). */
  sseClients(delta: number): void;
  /** One webhook delivery attempt's result. */
  webhookDelivery(result: string): void;
  /** Stop listening to the store, dispatcher and gateway. */
  close(): void;
}

const SECONDS_BUCKETS = {
  run: [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600],
  gateway: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  http: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
};

/**
 * Build the Prometheus metrics of `paddock serve` (docs/http-api.md, "Observability") on a registry of their own:
 * counters from the store's committed events and the dispatcher's and gateway's observers, gauges read from the
 * store at scrape time, and the hooks the server feeds.
 */
export function createMetrics(source: MetricsSource, options: MetricsOptions = {}): Metrics {
  const store = source instanceof Store ? source : source.store;
  const container = source instanceof Store ? undefined : source.container;
  const dispatcher = options.dispatcher ?? container?.resolve<Dispatcher>(TOKENS.Dispatcher);
  const gateway = options.gateway ?? container?.resolve<Gateway>(TOKENS.Gateway);
  const max = options.maxLabelValues ?? 100;
  const registry = new Registry();
  const registers = [registry];

  const runs = new Counter({
    name: 'paddock_runs_total',
    help: 'Runs of this process that ended, by outcome (run.ended status, or interrupted) and binding.',
    labelNames: ['outcome', 'binding'] as const,
    registers,
  });
  const duration = new Histogram({
    name: 'paddock_run_duration_seconds',
    help: 'Run duration from run.started to its end, by binding (runs that never started are not observed).',
    labelNames: ['binding'] as const,
    buckets: SECONDS_BUCKETS.run,
    registers,
  });
  const kills = new Counter({
    name: 'paddock_sandbox_kills_total',
    help: 'Runs a host limit acted on (killed, stopped or refused processes of), by the limit configuration name.',
    labelNames: ['limit'] as const,
    registers,
  });
  const refusals = new Counter({
    name: 'paddock_dispatch_refusals_total',
    help: 'Dispatch refusals of this process, by reason.',
    labelNames: ['reason'] as const,
    registers,
  });
  const gatewayCalls = new Counter({
    name: 'paddock_gateway_calls_total',
    help: 'Model calls through the gateway of this process (refused ones included), by provider and HTTP status.',
    labelNames: ['provider', 'status'] as const,
    registers,
  });
  const gatewayLatency = new Histogram({
    name: 'paddock_gateway_latency_seconds',
    help: 'Model call latency through the gateway, by provider.',
    labelNames: ['provider'] as const,
    buckets: SECONDS_BUCKETS.gateway,
    registers,
  });
  const gatewayTokens = new Counter({
    name: 'paddock_gateway_tokens_total',
    help: 'Metered model tokens through the gateway of this process, by direction (input, output).',
    labelNames: ['direction'] as const,
    registers,
  });
  new Gauge({
    name: 'paddock_queue_depth',
    help: 'Queued runs without a claim, every host process on the data folder.',
    registers,
    collect() {
      this.set(waitingRunsTotal(store));
    },
  });
  new Gauge({
    name: 'paddock_active_runs',
    help: 'Runs holding a claim, every host process on the data folder.',
    registers,
    collect() {
      this.set(claimedRunsTotal(store));
    },
  });
  const webhooks = new Counter({
    name: 'paddock_webhook_deliveries_total',
    help: 'Webhook delivery attempts, by result (delivered, retry, failed: given up).',
    labelNames: ['result'] as const,
    registers,
  });
  const sse = new Gauge({ name: 'paddock_sse_clients', help: 'Open SSE streams of this server.', registers });
  const httpRequests = new Counter({
    name: 'paddock_http_requests_total',
    help: 'HTTP requests answered, by route pattern and status.',
    labelNames: ['route', 'status'] as const,
    registers,
  });
  const httpDuration = new Histogram({
    name: 'paddock_http_request_duration_seconds',
    help: 'HTTP request duration, by route pattern.',
    labelNames: ['route'] as const,
    buckets: SECONDS_BUCKETS.http,
    registers,
  });
  registerApprovalMetrics(store, registry, max);
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry });

  // Fixed-set series start at 0, so a rate is defined before the first event.
  for (const limit of LIMIT_HITS) kills.inc({ limit }, 0);
  for (const reason of [...REFUSAL_REASONS, OTHER]) refusals.inc({ reason }, 0);
  for (const result of WEBHOOK_RESULTS) webhooks.inc({ result }, 0);
  for (const direction of ['input', 'output']) gatewayTokens.inc({ direction }, 0);

  const reasonLabel = fixedLabel(REFUSAL_REASONS);
  const providerLabel = fixedLabel(PROVIDERS);
  const webhookLabel = fixedLabel(WEBHOOK_RESULTS);
  const declaredRoutes = new Set<string>();
  const routeLabel = new CappedLabel(ROUTE_PATTERN, max);

  const stops = [
    registerLiveHeap(registry),
    feedRunMetrics(store, { runs, duration, kills }, max),
    dispatcher?.observeRefusals((reason) => refusals.inc({ reason: reasonLabel(reason) })),
    gateway?.observeCalls((call: ObservedCall) => {
      const provider = providerLabel(call.provider === '?' ? 'none' : call.provider);
      gatewayCalls.inc({ provider, status: statusLabel(call.status) });
      if (Number.isFinite(call.latencyMs) && call.latencyMs >= 0)
        gatewayLatency.observe({ provider }, call.latencyMs / 1000);
      if (call.inputTokens > 0) gatewayTokens.inc({ direction: 'input' }, call.inputTokens);
      if (call.outputTokens > 0) gatewayTokens.inc({ direction: 'output' }, call.outputTokens);
    }),
  ];
  let closed = false;
  return {
    registry,
    contentType: registry.contentType,
    render: () => registry.metrics(),
    declareRoute(pattern) {
      if (typeof pattern === 'string') declaredRoutes.add(pattern);
    },
    httpRequest(route, status, seconds) {
      const declared = route !== undefined && declaredRoutes.has(route) && !looksLikeId(route);
      const r = declared ? routeLabel.value(route) : OTHER;
      httpRequests.inc({ route: r, status: statusLabel(status) });
      if (Number.isFinite(seconds) && seconds >= 0) httpDuration.observe({ route: r }, seconds);
    },
    sseClients(delta) {
      if (Number.isInteger(delta)) sse.inc(delta);
    },
    webhookDelivery(result) {
      webhooks.inc({ result: webhookLabel(result) });
    },
    close() {
      if (closed) return;
      closed = true;
      for (const stop of stops) stop?.();
      registry.clear();
    },
  };
}
