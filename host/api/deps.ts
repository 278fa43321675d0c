/** What the route modules of `paddock serve` use of the host (`<area>Routes(app, deps)`). */
import type { Logger } from 'pino';
import type { HostConfig } from '../config/hostConfig.js';
import type { Dispatcher } from '../dispatch/dispatcher.js';
import type { Redactor } from '../secrets/redactor.js';
import type { Store } from '../state/store.js';
import type { Metrics } from './metrics/metrics.js';
import type { RateLimitOptions } from './rateLimit.js';

/** The host services a route may use; resolved once when the server is built. */
export interface ApiDeps {
  store: Store;
  dispatcher: Dispatcher;
  config: HostConfig;
  log: Logger;
  /** True once the server is stopping (readyz answers 503, new requests 503 `shutting_down`). */
  stopping(): boolean;
  /** The server's metrics (`GET /metrics`, request and SSE counts); absent when built without them. */
  metrics?: Metrics;
  /**
   * The host's redactor (it knows every secret the host reads): `POST /v1/config/apply` refuses a configuration
   * holding one of their values. Absent only in servers built without a host (the OpenAPI generator, fakes).
   */
  redactor?: Redactor;
  /**
   * Whether the `default` tenant's admin may change host-level configuration (resources, bindings outside the
   * isolation) as `paddock apply` on the host does: `paddock serve --api-host-config`. Default: no API admin may.
   */
  hostConfig?: boolean;
  /**
   * How often one tenant may change its configuration (applies, dry runs included; enable; disable); default
   * `APPLY_RATE` (host/api/routes/adminConfig.ts). In-process tests that are about something else raise it.
   */
  configChangeRate?: RateLimitOptions;
}
