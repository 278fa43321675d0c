import { indexResources, resolveRunAccess } from '../authz/runAccess.js';
import { parseLimits } from '../config/limits.js';
import { findRunner, type RunnerCatalog } from '../plugins/catalog.js';
import type { ConfigFile } from './schema.js';

/** A grant of a binding that will not reach its runner, and why. */
export interface GrantWarning {
  binding: string;
  what: string;
  why: string;
}

/**
 * Grants no run of each binding will get: the `withheld` list of the same resolveRunAccess() every
 * run uses (not a rule of its own). `apply` prints these as warnings; `explain` lists them too.
 */
export function grantWarnings(file: ConfigFile, catalog: RunnerCatalog): GrantWarning[] {
  const resources = indexResources(file.resources);
  // Limits do not change what is withheld; any valid host limits do.
  const limits = parseLimits();
  return file.bindings.flatMap((binding) => {
    const runner = findRunner(catalog, binding.runner);
    if (!runner) return [];
    return resolveRunAccess(runner.manifest, binding, resources, limits).withheld.map((w) => ({
      binding: binding.id,
      ...w,
    }));
  });
}
