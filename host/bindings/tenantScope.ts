/**
 * One tenant's view of the configuration, for applying and reading it on that tenant's behalf (`paddock serve`'s
 * admin endpoints, docs/http-api.md "Admin endpoints"): its own objects only, a file's objects stamped with it, and
 * the problems of a file that reaches outside it.
 */
import { tenantOf } from '../config/tenant.js';
import { CONFIG_KINDS, type ConfigKind, type ConfigObject, type ConfigRepo } from '../state/configRepo.js';
import type { ConfigProblem } from './validateConfig.js';
import type { ConfigFile, Resources } from './schema.js';

const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** The part of a configuration that belongs to `tenant` (same shape, other tenants' objects left out). */
export function configOfTenant(file: ConfigFile, tenant: string): ConfigFile {
  const resources = Object.fromEntries(
    Object.entries(file.resources).map(([plural, list]) => [
      plural,
      (list as { tenant?: string }[]).filter((r) => tenantOf(r) === tenant),
    ]),
  ) as unknown as Resources;
  return { resources, bindings: file.bindings.filter((b) => tenantOf(b) === tenant) };
}

/** Whether a stored object belongs to `tenant`. */
export function objectOfTenant(object: ConfigObject, tenant: string): boolean {
  return tenantOf(object.spec as { tenant?: string }) === tenant;
}

/** Each object item of a raw file, with its kind and field path (`resources.models[0]`, `bindings[2]`). */
function itemsOf(
  raw: unknown,
): { kind: ConfigKind; at: string; item: Record<string, unknown>; set: (v: unknown) => void }[] {
  if (!isRecord(raw)) return [];
  const out: ReturnType<typeof itemsOf> = [];
  const visit = (list: unknown, kind: ConfigKind, at: string) => {
    if (!Array.isArray(list)) return;
    list.forEach((item: unknown, i) => {
      if (isRecord(item)) out.push({ kind, at: `${at}[${i}]`, item, set: (v) => (list[i] = v) });
    });
  };
  if (isRecord(raw.resources))
    for (const [plural, kind] of Object.entries(CONFIG_KINDS))
      visit(raw.resources[plural], kind, `resources.${plural}`);
  visit(raw.bindings, 'binding', 'bindings');
  return out;
}

/**
 * A copy of a raw file whose objects without a `tenant` field name `tenant` (an applying token's tenant is the
 * default of its file, not the operator's `default`). Objects naming a tenant keep it (see {@link foreignProblems}).
 */
export function stampTenant(raw: unknown, tenant: string): unknown {
  const copy = structuredClone(raw);
  for (const { item, set } of itemsOf(copy)) if (!('tenant' in item)) set({ ...item, tenant });
  return copy;
}

/**
 * What a raw file applied for `tenant` may not do, each at its field path: name another tenant, or take an id another
 * tenant's object holds (ids are unique host-wide per kind: writing it would overwrite that object). The second says
 * only that the id is in use, never whose or what.
 */
export function foreignProblems(raw: unknown, tenant: string, repo: ConfigRepo): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const { kind, at, item } of itemsOf(raw)) {
    if ('tenant' in item && item.tenant !== tenant)
      problems.push({
        field: `${at}.tenant`,
        message: `names tenant ${JSON.stringify(item.tenant)}; this token applies objects of tenant "${tenant}" only`,
      });
    if (typeof item.id !== 'string') continue;
    const stored = repo.get(kind, item.id);
    if (stored && !objectOfTenant(stored, tenant)) problems.push(takenProblem(`${at}.id`, kind, item.id));
  }
  return problems;
}

/** The problem of an id another tenant's object holds. */
export function takenProblem(field: string, kind: ConfigKind, id: string): ConfigProblem {
  return {
    field,
    message: `${kind} id "${id}" is in use (ids are unique across the host's tenants); choose another`,
  };
}
