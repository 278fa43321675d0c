/**
 * Bindings as the admin front ends (the CLI's `bindings …`/`explain`, `paddock serve`'s `/v1/bindings`) read and
 * change them: every binding for the operator, one tenant's for an API token (another tenant's binding is NOT_FOUND,
 * exactly like a missing one).
 */
import { applyConfig } from '../bindings/apply.js';
import { explainBinding, type Explanation } from '../bindings/explain.js';
import type { Binding } from '../bindings/schema.js';
import { objectOfTenant } from '../bindings/tenantScope.js';
import type { ValidationContext } from '../bindings/validateConfig.js';
import type { HostConfig } from '../config/hostConfig.js';
import { requestCancel } from '../dispatch/runControls.js';
import { HostError } from '../errors.js';
import { HARNESS_DIR } from '../harness/harnesses.js';
import { verifyInstalledPackage } from '../packages/verifyInstalled.js';
import { findRunner } from '../plugins/catalog.js';
import { ConfigRepo, type ConfigObject } from '../state/configRepo.js';
import type { Store } from '../state/store.js';
import { exportConfig } from './config.js';

/** Binding `id`, or NOT_FOUND; with `tenant`, another tenant's binding is NOT_FOUND with the same message. */
export function bindingOf(store: Store, id: string, tenant?: string): ConfigObject<Binding> {
  const found = new ConfigRepo(store).get<Binding>('binding', id);
  if (!found || (tenant !== undefined && !objectOfTenant(found, tenant)))
    throw new HostError('NOT_FOUND', `no binding "${id}"`, { bindingId: id });
  return found;
}

/** The stored bindings, by id: all, or `tenant`'s. */
export function listBindings(store: Store, tenant?: string): ConfigObject<Binding>[] {
  const repo = new ConfigRepo(store);
  // A tenant's list is its index range: other tenants' bindings are not read (checked again, as every reader does).
  return tenant === undefined
    ? repo.list<Binding>('binding')
    : repo.listOfTenant<Binding>('binding', tenant).filter((b) => objectOfTenant(b, tenant));
}

/** One recorded change of a binding. */
export interface BindingChange {
  version: number;
  action: string;
  by: string;
  at: string;
}

/**
 * Binding `id` with its recorded changes. With `tenant`, the history starts after the binding's last deletion: an id
 * another tenant used before belongs to a deleted object, whose changes (and actors) are that tenant's.
 */
export function showBinding(
  store: Store,
  id: string,
  tenant?: string,
): ConfigObject<Binding> & { history: BindingChange[] } {
  const current = bindingOf(store, id, tenant);
  const history = new ConfigRepo(store).history('binding', id);
  const lastDeleted = history.map((h) => h.action).lastIndexOf('deleted');
  return { ...current, history: tenant === undefined ? history : history.slice(lastDeleted + 1) };
}

/**
 * Ask the process holding each queued or running run of binding `bindingId` (of `tenant`'s sessions only, when
 * given) to cancel it, through run_controls (audited): it works for runs another process holds. Returns the run ids.
 */
export function cancelActiveRuns(
  store: Store,
  bindingId: string,
  reason: string,
  by: string,
  tenant?: string,
): string[] {
  const active = store
    .runs({ status: ['queued', 'running'], bindingId, limit: 1_000_000, ...(tenant === undefined ? {} : { tenant }) })
    .map((r) => r.id);
  requestCancel(store, active, reason, by);
  return active;
}

/** What enabling or disabling a binding did. */
export interface EnableReport {
  bindingId: string;
  enabled: boolean;
  /** False when the binding already was so. */
  changed: boolean;
  /** How many active runs were asked to cancel (disable with `cancelActive`). */
  cancelRequested: number;
  /** Their ids. */
  cancelledRunIds: string[];
}

/**
 * Enable or disable binding `id` as `apply` would (validated with the rest of the configuration, one audited
 * transaction); disabling with `cancelActive` then asks its active runs to cancel.
 */
export function setBindingEnabled(
  store: Store,
  context: ValidationContext,
  id: string,
  enabled: boolean,
  options: { by: string; cancelActive?: boolean; tenant?: string; hostLevel?: boolean },
): EnableReport {
  const current = bindingOf(store, id, options.tenant);
  const { changes } = applyConfig(store, { bindings: [{ ...current.spec, enabled }] }, context, {
    by: options.by,
    tenant: options.tenant,
    hostLevel: options.hostLevel,
  });
  const changed = changes.find((c) => c.kind === 'binding' && c.id === id)?.action !== 'unchanged';
  const cancelled =
    !enabled && options.cancelActive
      ? cancelActiveRuns(store, id, `binding ${id} was disabled`, options.by, options.tenant)
      : [];
  return { bindingId: id, enabled, changed, cancelRequested: cancelled.length, cancelledRunIds: cancelled };
}

/** `paddock explain` of stored binding `id` (of `tenant`, when given), computed by the code that enforces it. */
export function explainStoredBinding(
  store: Store,
  config: HostConfig,
  context: ValidationContext,
  id: string,
  tenant?: string,
): Explanation {
  const binding = bindingOf(store, id, tenant).spec;
  const explanation = explainBinding(binding, context.catalog, exportConfig(store).resources, config.limits, {
    dataDir: config.dataDir,
    harnessDir: config.harnessDir ?? HARNESS_DIR,
    mountRoots: config.mountRoots ?? [],
  });
  // An installed package's integrity, from the check every run makes (it records a change it finds, as a run would).
  const version = findRunner(context.catalog, binding.runner)?.package?.version;
  if (version !== undefined && !('missing' in explanation.runner)) {
    const verdict = verifyInstalledPackage(store, config.dataDir, explanation.runner.id, version, {
      by: 'host:explain',
    });
    explanation.runner.package = verdict.ok
      ? { status: 'ok', changed: [] }
      : { status: 'tampered', changed: verdict.changed };
  }
  return explanation;
}
