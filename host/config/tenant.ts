import { HostError } from '../errors.js';

/** The tenant every object belongs to unless it names another: the operator's (docs/http-api.md). */
export const DEFAULT_TENANT = 'default';

/**
 * A tenant name: lowercase ASCII letters, digits, `_` and `-`, starting with a letter or digit, at most 63. Nothing is
 * folded or trimmed: `Acme`, ` acme` and a look-alike in another script are refused, never taken for `acme`.
 */
export const TENANT_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/** Whether `value` is a tenant name. */
export function isTenant(value: unknown): value is string {
  return typeof value === 'string' && TENANT_PATTERN.test(value);
}

/** Throw `INVALID_INPUT` unless `value` is a tenant name (the name is quoted as JSON: control characters show). */
export function assertTenant(value: unknown): asserts value is string {
  if (!isTenant(value))
    throw new HostError(
      'INVALID_INPUT',
      `tenant ${JSON.stringify(String(value)).slice(0, 80)} is not a tenant name ([a-z0-9][a-z0-9_-]{0,62})`,
      { field: 'tenant' },
    );
}

/** The tenant of a stored resource or binding (one stored before tenants is the default tenant's). */
export function tenantOf(spec: { tenant?: string }): string {
  return spec.tenant ?? DEFAULT_TENANT;
}
