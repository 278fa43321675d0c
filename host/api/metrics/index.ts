/** The Prometheus metrics of `paddock serve` (the server mounts them at `GET /metrics`). */
export {
  createMetrics,
  REFUSAL_REASONS,
  WEBHOOK_RESULTS,
  type Metrics,
  type MetricsOptions,
  type MetricsSource,
} from './metrics.js';
