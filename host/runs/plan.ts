import type { ChatEvent } from '../../sdk/protocol/types.js';
import { indexResources, resolveRunAccess, type RunAccess, type ResourceIndex } from '../authz/runAccess.js';
import { ConfigRepo } from '../bindings/configRepo.js';
import { matchBinding } from '../bindings/routing.js';
import { resourcesOfTenant } from '../bindings/tenantResources.js';
import { BindingSchema, GrantsSchema, type Binding, type Resources } from '../bindings/schema.js';
import type { HostConfig } from '../config/hostConfig.js';
import { HostError } from '../errors.js';
import { discoverRunners, findRunner, runnerIdOf, type InstalledRunnerRef } from '../plugins/catalog.js';
import { installedRunnerRefs } from '../packages/installedRunners.js';
import { verifyInstalledPackage } from '../packages/verifyInstalled.js';
import { validateRunnerConfig } from '../plugins/configSchema.js';
import { BUILTIN_RUNNERS_DIR, resolveRunner, type ResolvedRunner } from '../plugins/resolveRunner.js';
import { verifyBuiltinRunner, type BuiltinCheck } from '../packages/builtinDigests.js';
import { dirname } from 'node:path';
import { decideSandbox } from '../sandbox/decide.js';
import type { Backend } from '../sandbox/prepare.js';
import type { MachineReport } from '../sandbox/probe.js';
import { registerConfigSecrets } from '../secrets/hostSecrets.js';
import type { Redactor } from '../secrets/redactor.js';
import type { Store } from '../state/store.js';
import { tenantOf } from '../config/tenant.js';

/** Everything decided about a run before it starts: runner, binding, config and access. */
export interface RunPlan {
  runner: ResolvedRunner;
  /** The effective binding: the decided backend, the validated config (defaults filled). */
  binding: Binding;
  access: RunAccess;
  /** Resources as they were when the access was computed (for copying into the workspace). */
  resources: ResourceIndex;
  /** The sandbox decision: the backend asked for and what was given up for this machine (audited when not empty). */
  sandbox: { asked: Backend; degraded: string[] };
}

/** Why a run was refused before it was queued (stable; clients branch on it). */
export type PlanRefusal =
  | 'no_binding'
  | 'binding_disabled'
  | 'runner_unavailable'
  | 'runner_tampered'
  | 'sandbox_unavailable'
  | 'limits_unavailable'
  | 'config_invalid';

/** What to plan: a dispatched chat event (routed to a binding) or an ad-hoc run of a runner. */
export type PlanRequest =
  | {
      kind: 'dispatch';
      event: ChatEvent;
      /** The tenant the event was dispatched for: only its bindings route it (validated by the dispatcher). */
      tenant: string;
      /** Plan for this binding only (a queued run planned again at its start): refused when it no longer routes. */
      bindingId?: string;
    }
  | {
      kind: 'adhoc';
      /** Runner folder or name. */
      runner: string;
      config?: Record<string, unknown>;
      /** Sandbox backend (default `process`). */
      sandbox?: Backend;
      /** Run with less isolation where the backend or a limit is missing (audited), like a binding's `allowDegrade`. */
      allowDegrade?: boolean;
    };

/** What planning reads. */
export interface PlanDeps {
  config: HostConfig;
  store: Store;
  redactor: Redactor;
  /** The machine the sandbox decision is made for (default: probed). */
  machine?: () => MachineReport;
  /** How a built-in runner's folder is checked against the build's record (default: this process's verifier). */
  verifyBuiltin?: (dir: string) => BuiltinCheck;
}

/** A refusal of planning, with its reason code (`data.reason`) and what it concerns. */
export function planRefused(reason: PlanRefusal, message: string, data: Record<string, unknown> = {}): HostError {
  return new HostError('RUN_REFUSED', message, { reason, ...data });
}

const NO_RESOURCES: Resources = {
  models: [],
  knowledgeBases: [],
  mcpServers: [],
  skills: [],
  artifacts: [],
  mounts: [],
};

/**
 * The one planning path of a run, dispatched or ad hoc: the binding (routed, or made from the
 * runner's manifest), the sandbox decision, the runner and its config, secret registration and
 * the grant access — the same rules in the same order (docs/run-pipeline.md, "plan"). Throws
 * a `RUN_REFUSED` {@link HostError} with `data.reason`; an ad-hoc runner that cannot be found or
 * read keeps its own error (it names the file).
 */
export function planRun(deps: PlanDeps, request: PlanRequest): RunPlan {
  const repo = request.kind === 'dispatch' ? new ConfigRepo(deps.store) : undefined;
  const { binding, runner: adHocRunner } =
    request.kind === 'dispatch'
      ? { binding: routedBinding(repo!, request.tenant, request.event, request.bindingId), runner: undefined }
      : adHocBinding(deps.config, request);
  if (!binding.enabled)
    throw planRefused('binding_disabled', `binding "${binding.id}" is disabled`, { bindingId: binding.id });
  const sandbox = decideSandbox(binding, deps.machine?.());
  if (!sandbox.ok) throw planRefused(sandbox.reason, sandbox.message, { bindingId: binding.id });
  const runner = adHocRunner ?? catalogRunner(deps, binding);
  refuseChangedBuiltin(deps, binding, runner);
  // A binding's config is checked again now (the runner's schema may have changed since apply). An
  // ad-hoc config goes to the runner as given: its own validation answers, as a failed run naming
  // the field (what `paddock run --config` has always shown; cli.test.ts).
  const checked =
    request.kind === 'dispatch'
      ? validateRunnerConfig(runner.manifest.configSchema, binding.config)
      : { ok: true as const, config: binding.config };
  if (!checked.ok) {
    throw planRefused(
      'config_invalid',
      `binding "${binding.id}": config.${checked.field}: ${checked.message} (the runner's config schema changed?)`,
      { bindingId: binding.id, field: `config.${checked.field}` },
    );
  }
  // Only the binding's own tenant's resources exist for its runs (apply refuses a cross-tenant grant; this holds even
  // for a store that somehow has one).
  const tenant = tenantOf(binding);
  const snapshot = repo ? resourcesOfTenant(repo.resourcesOfTenant(tenant), tenant) : NO_RESOURCES;
  // Keys referenced since the host started (a new `apply`) are known to the redactor before the run.
  registerConfigSecrets(deps.redactor, snapshot);
  const resources = indexResources(snapshot);
  const effective: Binding = { ...binding, config: checked.config, sandbox: sandbox.backend };
  return {
    runner,
    binding: effective,
    resources,
    access: resolveRunAccess(runner.manifest, effective, resources, deps.config.limits),
    sandbox: { asked: binding.sandbox, degraded: sandbox.degraded },
  };
}

/**
 * The most specific binding of `tenant` that routes `event` (among `only`, when given), or a `no_binding` refusal.
 * Other tenants' bindings are not looked at, so a refusal says nothing about them (not even that one exists).
 */
function routedBinding(repo: ConfigRepo, tenant: string, event: ChatEvent, only?: string): Binding {
  // Read by the tenant's index range (other tenants' bindings are not even parsed), then checked again here.
  const bindings = repo
    .listOfTenant<Binding>('binding', tenant)
    .map((o) => o.spec)
    .filter((b) => tenantOf(b) === tenant);
  const binding = matchBinding(only === undefined ? bindings : bindings.filter((b) => b.id === only), event);
  const where = `${event.platform}/${event.bot}/${event.conversation.type}:${event.conversation.id} (${event.type})`;
  if (binding) return binding;
  if (only === undefined) throw planRefused('no_binding', `no binding routes ${where}`);
  const gone = !bindings.some((b) => b.id === only);
  throw planRefused('no_binding', `binding "${only}" ${gone ? 'no longer exists' : `no longer routes ${where}`}`, {
    bindingId: only,
  });
}

/**
 * The binding's runner from the catalog (`<id>`, or an installed `<id>@<version>`), its package checked first when it
 * is an installed one (host/packages/verifyInstalled.ts): a changed package is a `runner_tampered` refusal, a missing
 * or broken runner a `runner_unavailable` one naming what is wrong.
 */
function catalogRunner(deps: PlanDeps, binding: Binding): ResolvedRunner {
  const { config, store } = deps;
  const installed = installedRunnerRefs(store, config.dataDir);
  const catalog = discoverRunners(config.runnerDirs, { only: binding.runner, installed });
  const runner = findRunner(catalog, binding.runner);
  // The version the reference picks: a pinned one, or the newest installed when no built-in or earlier runner has
  // the id. Checked before its manifest is trusted (a broken manifest of a changed package is a tampering).
  const version = runner?.package?.version ?? pickedVersion(installed, binding.runner, runner);
  if (version !== undefined) {
    const id = runnerIdOf(binding.runner);
    const verdict = verifyInstalledPackage(store, config.dataDir, id, version);
    if (!verdict.ok)
      throw planRefused(
        'runner_tampered',
        `binding "${binding.id}": runner package ${id}@${version} changed since it was installed ` +
          `(${verdict.changed.slice(0, 3).join(', ')}${verdict.changed.length > 3 ? ', …' : ''}): its runs are ` +
          'refused until it is installed again (`paddock runners install`) or removed',
        { bindingId: binding.id, runner: id, version, changed: verdict.changed },
      );
  }
  if (runner) return runner;
  const problem = catalog.problems.find((p) => p.file.includes(`/${runnerIdOf(binding.runner)}`));
  throw planRefused(
    'runner_unavailable',
    `binding "${binding.id}": runner "${binding.runner}" is ` +
      `${problem ? `broken: ${problem.message}` : 'not installed'}`,
    { bindingId: binding.id },
  );
}

/** Built-in runners whose change this process has audited (one record per runner and process, not one per run). */
const auditedBuiltins = new Set<string>();

/**
 * A built-in runner is checked against the build's record (host/packages/builtinDigests.ts) before its run: a folder
 * changed since the build (a process-backend runner writing into it, an edit without a rebuild) is a
 * `runner_tampered` refusal, audited once per process.
 */
function refuseChangedBuiltin(deps: PlanDeps, binding: Binding, runner: ResolvedRunner): void {
  if (dirname(runner.dir) !== BUILTIN_RUNNERS_DIR) return;
  const { store } = deps;
  const check = (deps.verifyBuiltin ?? verifyBuiltinRunner)(runner.dir);
  if (check.ok) return;
  if (!auditedBuiltins.has(check.runner)) {
    auditedBuiltins.add(check.runner);
    store.transaction(() =>
      store.audit.append({
        type: 'runner.tampered',
        actor: 'host',
        data: { runner: check.runner, builtin: true, digest: check.expected, changed: check.changed.slice(0, 20) },
      }),
    );
  }
  throw planRefused(
    'runner_tampered',
    `binding "${binding.id}": built-in runner "${check.runner}": ${check.problem ?? 'changed since the build'} ` +
      "(its runs are refused until the host's install is repaired: reinstall paddock, or rebuild after an edit)",
    { bindingId: binding.id, runner: check.runner, builtin: true, changed: check.changed.slice(0, 20) },
  );
}

/** The installed version `ref` names when the catalog could not load it (its manifest broken): pinned, or newest. */
function pickedVersion(
  installed: readonly InstalledRunnerRef[],
  ref: string,
  found: ReturnType<typeof findRunner>,
): string | undefined {
  if (found) return undefined;
  const id = runnerIdOf(ref);
  const versions = installed.filter((p) => p.id === id).map((p) => p.version);
  if (ref.includes('@')) return versions.find((v) => `${id}@${v}` === ref);
  return versions.at(-1);
}

/**
 * The binding of a run with no binding: the operator who starts it acts as the admin and grants
 * the host requests the runner's manifest asks for (state per session), and no resources.
 */
function adHocBinding(
  config: HostConfig,
  request: Extract<PlanRequest, { kind: 'adhoc' }>,
): { binding: Binding; runner: ResolvedRunner } {
  const runner = resolveRunner(request.runner, config.runnerDirs);
  const asks = runner.manifest.capabilities.hostRequests;
  const binding = BindingSchema.parse({
    id: `adhoc-${runner.manifest.id}`,
    runner: runner.manifest.id,
    config: request.config ?? {},
    sandbox: request.sandbox ?? 'process',
    allowDegrade: request.allowDegrade ?? false,
    grants: GrantsSchema.parse({
      state: asks.some((m) => m.startsWith('state/')) ? 'session' : 'none',
      fs: asks.includes('fs/write') ? 'readwrite' : asks.includes('fs/read') ? 'read' : 'none',
      approval: asks.includes('approval/request'),
    }),
  });
  return { binding, runner };
}
