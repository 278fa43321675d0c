// Label values of the metrics: bounded and free of tenant data (docs/http-api.md, "Observability"). A label's
// value is either one of a fixed set, or a configuration name (a binding id, a route pattern) that must be
// well-formed and is capped in how many distinct values it may take; anything else is `other`.

/** The value every label falls back to when what it was given is not one of its values. */
export const OTHER = 'other';

/** A label from a fixed set of values: anything else (untrusted or unexpected) is {@link OTHER}. */
export function fixedLabel<T extends string>(values: readonly T[]): (raw: unknown) => T | typeof OTHER {
  const allowed = new Set<string>(values);
  return (raw) => (typeof raw === 'string' && allowed.has(raw) ? (raw as T) : OTHER);
}

/**
 * A label whose values come from configuration (binding ids, route patterns): a value must match `pattern` and
 * be one of the first `max` distinct values seen; anything else is {@link OTHER}. The cap keeps a metric's series
 * bounded even if an unexpected source feeds it values without end.
 */
export class CappedLabel {
  private readonly seen = new Set<string>();

  constructor(
    private readonly pattern: RegExp,
    private readonly max: number,
  ) {}

  /** The label value for `raw`. */
  value(raw: unknown): string {
    if (typeof raw !== 'string' || !this.pattern.test(raw)) return OTHER;
    if (this.seen.has(raw)) return raw;
    if (this.seen.size >= this.max) return OTHER;
    this.seen.add(raw);
    return raw;
  }
}

/** A binding id as configuration allows it (host/bindings/schema.ts ObjectId), or an ad-hoc run's `adhoc-<runner>`. */
export const BINDING_ID = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/**
 * A route pattern (`/v1/runs/:id/events`): path characters and parameter marks only, no query, no percent
 * encoding. It cannot tell a pattern from a URL with an id in it: the server passes the route's pattern, and
 * {@link MetricsOptions.routes} (when given) lists the only ones accepted.
 */
export const ROUTE_PATTERN = /^\/[A-Za-z0-9/_:.{}*-]{0,127}$/;

/**
 * Whether a route carries what looks like an object id rather than a parameter: a store id (`run_…`, `ses_…`,
 * `evt_…`), a token (`pdk_…`), a run of 8 or more hex digits or of 4 or more decimal digits. A safety net for a URL
 * passed where a pattern belongs; the route patterns of `paddock serve` have none.
 */
export function looksLikeId(route: string): boolean {
  return /(^|[/_-])(run|ses|evt|pdk|dlv|whk)_|[0-9a-fA-F]{8}|\d{4}/.test(route);
}

/** An HTTP status code as a label (`100`–`599`), else {@link OTHER}. */
export function statusLabel(raw: unknown): string {
  return typeof raw === 'number' && Number.isInteger(raw) && raw >= 100 && raw <= 599 ? String(raw) : OTHER;
}
