/**
 * The configuration as the admin front ends (the CLI's `apply`/`export`/`resources list`, `paddock serve`'s
 * `/v1/config`) read and apply it: the whole store for the operator, one tenant's part for an API token.
 */
import { applyConfig, type AppliedChange } from '../bindings/apply.js';
import type { GrantWarning } from '../bindings/grantWarnings.js';
import type { ConfigFile } from '../bindings/schema.js';
import { configOfTenant, objectOfTenant } from '../bindings/tenantScope.js';
import type { ValidationContext } from '../bindings/validateConfig.js';
import type { HostConfig } from '../config/hostConfig.js';
import { hostCatalog } from '../packages/installedRunners.js';
import type { Redactor } from '../secrets/redactor.js';
import { CONFIG_KINDS, ConfigRepo, type ConfigObject } from '../state/configRepo.js';
import type { Store } from '../state/store.js';

/**
 * What validation checks a configuration against on this host (runners — built-in, installed packages of `store`,
 * runner folders —, mount roots, known secret values).
 */
export function validationContext(config: HostConfig, redactor: Redactor | undefined, store: Store): ValidationContext {
  return { catalog: hostCatalog(config, store), mountRoots: config.mountRoots ?? [], redactor };
}

/** The stored configuration in the shape of `paddock.yaml`: all of it, or `tenant`'s part. */
export function exportConfig(store: Store, tenant?: string): ConfigFile {
  const snapshot = new ConfigRepo(store).snapshot();
  return tenant === undefined ? snapshot : configOfTenant(snapshot, tenant);
}

/** The stored resources (every kind but bindings), by kind then id: all, or `tenant`'s. */
export function listResources(store: Store, tenant?: string): ConfigObject[] {
  const kinds = new Set<string>(Object.values(CONFIG_KINDS));
  return new ConfigRepo(store)
    .list()
    .filter((o) => kinds.has(o.kind) && (tenant === undefined || objectOfTenant(o, tenant)));
}

/** What applying a configuration did (or, dry, would do). */
export interface ApplyReport {
  dryRun: boolean;
  changes: AppliedChange[];
  warnings: GrantWarning[];
  missingSecrets: string[];
}

/** Apply `raw` (see applyConfig; `tenant` scopes it to one tenant's objects) and report it as both front ends do. */
export function applyAs(
  store: Store,
  raw: unknown,
  context: ValidationContext,
  options: { by: string; dryRun?: boolean; prune?: boolean; tenant?: string; hostLevel?: boolean },
): ApplyReport {
  const { changes, warnings, missingSecrets } = applyConfig(store, raw, context, options);
  return { dryRun: options.dryRun ?? false, changes, warnings, missingSecrets };
}
