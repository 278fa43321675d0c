import { indexResources, resolveRunAccess, type RunAccess } from '../authz/runAccess.js';
import type { HostLimits } from '../config/limits.js';
import { findRunner, type RunnerCatalog } from '../plugins/catalog.js';
import type { IsolationReport } from '../process/isolationReport.js';
import { RunnerManifestSchema } from '../plugins/manifest.js';
import { probeMachine } from '../sandbox/probe.js';
import { sandboxBackend, type Backend } from '../sandbox/backend.js';
import { decideSandbox } from '../sandbox/decide.js';
import type { SandboxBind } from '../sandbox/bwrapArgs.js';
import { runSandboxRequest } from '../sandbox/runSandbox.js';
import type { ResolvedRunner } from '../plugins/resolveRunner.js';
import type { Binding, Resources } from './schema.js';
import { insideRoots } from '../util/insideRoots.js';
import { policyTable, type PolicyTable } from '../policy/policyTable.js';
import { egressBeyondList, wantsEgressProxy } from '../policy/egressReach.js';
import { join } from 'node:path';

/** Host paths `explain` needs to build a run's launch without starting it. */
export interface ExplainPaths {
  dataDir: string;
  harnessDir: string;
  mountRoots: readonly string[];
}
import { describeMissingRef, missingSecretRefs } from '../secrets/hostSecrets.js';
import { identityAccessProblem } from '../sandbox/runIdentityFiles.js';
import type { RunIdentity } from '../sandbox/runIdentity.js';
import { terminalSafe } from '../util/terminalText.js';
import { tenantOf } from '../config/tenant.js';
import { resourcesOfTenant } from './tenantResources.js';

const EMPTY_MANIFEST = RunnerManifestSchema.parse({
  id: 'missing',
  name: 'missing',
  version: '0',
  protocolVersion: 1,
  entry: { node: 'index.js' },
});

/** What a run of a binding may touch, in the worst case, as `paddock explain` prints it. */
export interface Explanation {
  binding: {
    id: string;
    /** The tenant whose dispatched events alone route here. */
    tenant: string;
    enabled: boolean;
    runner: string;
    route: Binding['route'];
    steering: Binding['steering'];
    /** Steering `append`: where a message that arrives during a run goes, with this runner. */
    steeringNote?: string;
    approvalPolicy: Binding['approvalPolicy'];
  };
  runner:
    | {
        id: string;
        version: string;
        dir: string;
        risk: string;
        /** An installed package: its integrity as the per-run check finds it now (host/packages/verifyInstalled.ts). */
        package?: { status: 'ok' | 'tampered'; changed: string[] };
      }
    | { id: string; missing: string };
  /** The access every run gets (absent when the runner is missing). */
  access?: Omit<RunAccess, 'withheld' | 'limits' | 'requestLimits'>;
  /** What the runner may do by itself, outside host requests (declared by its manifest). */
  effects: string[];
  limits: Record<string, number>;
  workspace: { mode: Binding['workspace']; layout: string; contents: string[] };
  network: string;
  sandbox: {
    profile: string;
    available: boolean;
    backend?: string;
    degraded: string[];
    refusal?: string;
    report?: IsolationReport;
  };
  /** The worst a run can do, from the backend's own report and launch recipe. */
  worstCase: { readable: string[]; writable: string[]; network: string; credentials: string; hostIdentity: string };
  /** Under bwrap: every bind of the launch a run of this binding would get (`<runId>`, `<sessionId>`: per run). */
  binds?: SandboxBind[];
  withheld: RunAccess['withheld'];
  /** Secret references of the resources this binding grants that do not resolve here now. */
  missingSecrets: string[];
  /**
   * The approval policy (docs/approvals.md §2): its rules in order, the host's defaults for sample actions (with no
   * rule, and with this binding's rules and approvalPolicy) and the floors, decided by the run's own evaluator.
   */
  approvals: PolicyTable;
}

/**
 * Explain a binding from the same code that enforces it: the access is computed by
 * `resolveRunAccess()`, the isolation facts come from the backend's own report.
 */
export function explainBinding(
  binding: Binding,
  catalog: RunnerCatalog,
  resources: Resources,
  hostLimits: HostLimits,
  paths: ExplainPaths,
): Explanation {
  const runner = findRunner(catalog, binding.runner);
  // What planning gives a run: its own tenant's resources only.
  resources = resourcesOfTenant(resources, tenantOf(binding));
  const machine = probeMachine();
  const decision = decideSandbox(binding, machine);
  // One access serves both the isolation report (its limits) and the explanation below.
  const p = resolveRunAccess(runner?.manifest ?? EMPTY_MANIFEST, binding, indexResources(resources), hostLimits);
  // The network facts the launch would have: the same predicate decides whether the egress proxy starts.
  const backend = decision.ok ? sandboxBackend(decision.backend) : undefined;
  const report = backend?.report(p.limits, machine, machine.cgroups, {
    proxy: backend.startsEgressProxy(wantsEgressProxy(binding)),
    allow: binding.network.egress,
    allowPrivate: binding.network.allowPrivate,
    beyondList: egressBeyondList(binding),
  });
  // A backend that binds: the lists are read from the launch itself, the same request and options a run gets.
  const binds = backend?.launchBinds(plannedRequest(binding, runner, p, resources, paths, backend.name));
  const where = (b: SandboxBind) =>
    `${b.source === b.target ? b.target : `${b.source} at ${b.target}`}${b.optional ? ' (if present)' : ''}`;
  const manifestEnv = runner ? Object.keys(runner.manifest.env) : [];
  const worstCase = {
    readable: binds
      ? [
          ...binds.filter((b) => b.mode === 'ro' || b.mode === 'rw').map(where),
          `links: ${
            binds
              .filter((b) => b.mode === 'link')
              .map((b) => `${b.target} → ${b.source}`)
              .join(', ') || 'none'
          }`,
          `the sandbox's own ${binds
            .filter((b) => b.mode === 'own')
            .map((b) => b.target)
            .join(', ')} (nothing of the host's)`,
        ]
      : [`everything the host user (uid ${process.getuid?.() ?? '?'}) can read`],
    // A rw bind of the admin's (a mount) the run identity cannot write refuses the run at start: said here.
    writable: binds
      ? binds
          .filter((b) => b.mode === 'rw')
          .map(
            (b) =>
              where(b) +
              (b.source.startsWith(`${paths.dataDir}/`) ? '' : writeRefusal(b.source, backend?.runIdentity(machine))),
          )
      : [`everything the host user (uid ${process.getuid?.() ?? '?'}) can write`],
    // A refused binding keeps today's wording: the host user's (the weakest backend's) identity.
    hostIdentity: (backend ?? sandboxBackend('process')).hostIdentity(machine),
    network: report?.network ?? 'none: runs are refused',
    credentials:
      `none of the host's: the environment is PATH, locale, HOME, TMPDIR, PADDOCK_RUN_ID` +
      `${manifestEnv.length ? ` and the manifest's literal ${manifestEnv.join(', ')}` : ''}${
        p.models.length + p.knowledgeBases.length + p.mcpServers.length > 0
          ? "; plus a run token (PADDOCK_RUN_TOKEN) good only at the host gateway, only for this run's grants " +
            'and budget, revoked when the run ends'
          : ''
      }`,
  };
  const grantedMcp = new Set(binding.grants.mcpServers.map((g) => (typeof g === 'string' ? g : g.id)));
  const missingSecrets = missingSecretRefs({
    models: resources.models.filter((m) => binding.grants.models.includes(m.id)),
    knowledgeBases: resources.knowledgeBases.filter((k) => binding.grants.knowledgeBases.includes(k.id)),
    mcpServers: resources.mcpServers.filter((s) => grantedMcp.has(s.id)),
  }).map(describeMissingRef);
  const base = {
    missingSecrets,
    approvals: policyTable({
      id: binding.id,
      policy: binding.policy,
      approvalPolicy: binding.approvalPolicy,
      approvalTimeoutMs: binding.approvalTimeoutMs,
      networkAllow: binding.network.egress,
      sandbox: sandboxBackend(binding.sandbox).strength,
    }),
    binding: {
      id: binding.id,
      tenant: tenantOf(binding),
      enabled: binding.enabled,
      runner: binding.runner,
      route: binding.route,
      steering: binding.steering,
      ...(binding.steering === 'append' ? { steeringNote: appendNote(binding.runner, runner?.manifest) } : {}),
      approvalPolicy: binding.approvalPolicy,
    },
    sandbox: {
      profile: binding.sandbox,
      available: decision.ok,
      degraded: decision.ok ? decision.degraded : [],
      ...(decision.ok ? { backend: decision.backend } : { refusal: decision.message }),
      ...(report ? { report } : {}),
    },
    worstCase,
    ...(binds ? { binds } : {}),
    network: report ? report.network : `none: runs are refused (${decision.ok ? '' : decision.message})`,
  };
  if (!runner) {
    return {
      ...base,
      runner: { id: binding.runner, missing: 'not installed or its manifest is broken (paddock runners list)' },
      effects: [],
      limits: {},
      workspace: { mode: binding.workspace, layout: '<data>/workspaces/<runId>/{in,out,tmp,home}', contents: [] },
      withheld: [{ what: 'everything', why: `runner "${binding.runner}" is not available; runs are refused` }],
    };
  }
  const { withheld, limits, requestLimits, ...access } = p;
  const contents = [
    ...p.artifacts.map((a) => `in/artifacts/${a.name} (copy of artifact ${a.id})`),
    ...p.skills.map((s) => `in/skills/${s.name}/ (copy of skill ${s.id})`),
    ...p.mounts.map(
      (m) =>
        `in/mounts/${m.id}/ (${binding.workspace === 'mount' ? 'link to' : 'copy of'} mount ${m.id}, ` +
        `${m.readOnly ? 'read-only' : 'read-write'}` +
        `${binding.workspace === 'mount' ? mountNote(m.readOnly, backend ?? sandboxBackend(binding.sandbox)) : ''}` +
        `)`,
    ),
  ];
  return {
    ...base,
    runner: { id: runner.manifest.id, version: runner.manifest.version, dir: runner.dir, risk: runner.manifest.risk },
    access,
    effects: runner.manifest.effects,
    limits: {
      wallClockMs: limits.wallClockMs,
      idleMs: limits.idleMs,
      maxUpdates: limits.maxUpdates,
      maxEventBytes: limits.maxEventBytes,
      // Refused at intake (dispatch, `paddock run`) before the run exists; shown with the run's limits.
      maxChatEventBytes: limits.maxChatEventBytes,
      maxStdoutBytes: limits.maxStdoutBytes,
      maxStderrBytes: limits.maxStderrBytes,
      ...requestLimits,
      maxConcurrentRuns: binding.limits.maxConcurrentRuns,
      maxQueued: binding.limits.maxQueued,
      // Model budgets, enforced by the gateway (docs/gateway.md).
      modelTokensPerRun: binding.limits.modelTokensPerRun,
      ...(binding.limits.modelCostPerRunUsd !== undefined
        ? { modelCostPerRunUsd: binding.limits.modelCostPerRunUsd }
        : {}),
      ...(binding.limits.modelTokensPerDay !== undefined
        ? { modelTokensPerDay: binding.limits.modelTokensPerDay }
        : {}),
      ...(binding.limits.modelCostPerDayUsd !== undefined
        ? { modelCostPerDayUsd: binding.limits.modelCostPerDayUsd }
        : {}),
    },
    workspace: {
      mode: binding.workspace,
      layout: '<data>/workspaces/<runId>/{in,out,tmp,home} (cwd = root, HOME = home, TMPDIR = tmp)',
      contents,
    },
    withheld,
  };
}

/** How a mount-mode mount reaches the run: bound by the sandbox, or a link whose read-only flag nothing enforces. */
function mountNote(readOnly: boolean, backend: { name: Backend; bindsGrants: boolean }): string {
  if (backend.bindsGrants) return ` — bound by ${backend.name}`;
  return readOnly ? ` — read-only NOT enforced by the ${backend.name} backend` : '';
}

/** Why runs will be refused over a rw mount the run identity cannot write ('' when they will not). */
function writeRefusal(path: string, ids: RunIdentity | undefined): string {
  const problem = ids ? identityAccessProblem(path, 'write', ids) : undefined;
  return problem ? ` — REFUSED at run start: ${problem} (docs/admin-guide.md "Run identity")` : '';
}

type Access = NonNullable<Explanation['access']>;

/** A readable rendering of an explanation. */
export function renderExplanation(e: Explanation): string {
  const lines: string[] = [];
  const list = (items: string[]) => (items.length ? items.join(', ') : 'none');
  const modelLine = (m: Access['models'][number]) =>
    `${m.id} (${m.provider === 'scripted' ? 'SCRIPTED test model, not a real LLM:' : m.provider} ${m.model})`;
  const mcpLine = (s: Access['mcpServers'][number]) =>
    `${s.id} [tools: ${s.allowedTools ? list(s.allowedTools) : 'all listed'}` +
    `${s.deniedTools.length ? `; never: ${s.deniedTools.join(', ')}` : ''}]`;
  const historyLine = (h: Exclude<Access['history'], 'none'>) =>
    `the last ${[h.messages !== undefined && `${h.messages} messages`, h.tokens !== undefined && `≤ ${h.tokens} tokens`]
      .filter(Boolean)
      .join(', ')} of this conversation (user messages and completed answers, redacted)`;
  lines.push(
    `binding ${e.binding.id} (${e.binding.enabled ? 'enabled' : 'DISABLED'}) · tenant ${e.binding.tenant} → runner ` +
      e.binding.runner,
  );
  lines.push(
    `  route: ${JSON.stringify(e.binding.route)} · steering ${e.binding.steering}` +
      `${e.binding.steeringNote ? ` (${e.binding.steeringNote})` : ''} · approvals ` +
      `${e.binding.approvalPolicy}`,
  );
  if ('missing' in e.runner) lines.push(`  runner: ${e.runner.missing}`);
  else
    lines.push(
      // The package's own words stay on this one line (a newline in `risk` must not fake a line of the explanation).
      `  runner: ${e.runner.id} ${terminalSafe(e.runner.version)} (${terminalSafe(e.runner.dir)})` +
        `${e.runner.risk ? ` — risk: ${terminalSafe(e.runner.risk)}` : ''}`,
    );
  if ('package' in e.runner && e.runner.package)
    lines.push(
      e.runner.package.status === 'ok'
        ? `  package: installed ${e.runner.id}@${terminalSafe(e.runner.version)}, its files as installed (checked now)`
        : `  package: installed ${e.runner.id}@${terminalSafe(e.runner.version)} is TAMPERED (changed: ` +
            `${e.runner.package.changed.map((p) => terminalSafe(p)).join(', ')}): its runs are refused until it is ` +
            'installed again or removed',
    );
  if (e.access) {
    const p = e.access;
    lines.push('may call (host requests):', `  ${list(p.hostRequests)}`);
    lines.push('resources:');
    lines.push(
      `  models: ${list(p.models.map(modelLine))}${p.models.length ? ' — through the host gateway only' : ''}`,
    );
    lines.push(`  knowledge bases: ${list(p.knowledgeBases.map((k) => k.id))}`);
    lines.push(`  MCP servers: ${list(p.mcpServers.map(mcpLine))}`);
    lines.push(
      `  skills: ${list(p.skills.map((s) => s.id))} · artifacts: ${list(p.artifacts.map((a) => a.id))} · ` +
        `mounts: ${list(p.mounts.map((m) => `${m.id} (${m.readOnly ? 'ro' : 'rw'})`))}`,
    );
    lines.push(`  state: ${p.state} · fs requests: ${p.fs} · approval requests: ${p.approval ? 'yes' : 'no'}`);
    lines.push(
      `  history: ${p.history === 'none' ? 'none (each run sees only its own message)' : historyLine(p.history)}`,
    );
  }
  lines.push(`effects the runner may cause by itself: ${list(e.effects)}`);
  lines.push(
    `limits: ${Object.entries(e.limits)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}`,
  );
  lines.push(`workspace (${e.workspace.mode}): ${e.workspace.layout}`);
  for (const c of e.workspace.contents) lines.push(`  ${c}`);
  lines.push(`network: ${e.network}`);
  lines.push(
    'worst case:',
    `  can read: ${e.worstCase.readable.join('; ')}`,
    `  can write: ${e.worstCase.writable.join('; ')}`,
    `  network: ${e.worstCase.network}`,
    `  credentials: ${e.worstCase.credentials}`,
    `  host identity: ${e.worstCase.hostIdentity}`,
  );
  for (const d of e.sandbox.degraded) lines.push(`  DEGRADED: ${d}`);
  if (e.sandbox.report) {
    lines.push(
      `sandbox: ` +
        `${e.sandbox.profile}${e.sandbox.backend !== e.sandbox.profile ? ` → ${e.sandbox.backend}` : ''} (` +
        `${e.sandbox.report.strength})`,
    );
    for (const g of e.sandbox.report.enforced) lines.push(`  enforced: ${g}`);
    for (const g of e.sandbox.report.notEnforced) lines.push(`  NOT enforced: ${g}`);
  } else
    lines.push(
      `sandbox: ${e.sandbox.refusal ?? `${e.sandbox.profile} is NOT available`}: runs of this binding are refused`,
    );
  lines.push(...renderApprovals(e.approvals));
  for (const m of e.missingSecrets) lines.push(`MISSING SECRET: ${m}`);
  if (e.withheld.length) {
    lines.push('granted or requested but withheld (will not reach the runner):');
    for (const w of e.withheld) lines.push(`  ${w.what} — ${w.why}`);
  }
  return lines.join('\n');
}

/** The approval policy section of an explanation (rule text is the admin's own: escaped for the terminal). */
function renderApprovals(a: PolicyTable): string[] {
  const lines = [
    `approvals: approvalPolicy ${a.approvalPolicy} · an ask waits ${a.approvalTimeoutMs} ms for a person`,
    '  rules (a matching deny wins; else the most specific ask/allow, ask on a tie; else the host default):',
  ];
  if (a.rules.length === 0) lines.push('    none');
  for (const r of a.rules)
    lines.push(
      terminalSafe(
        `    ${r.n}. ${r.effect} ${r.match} → ${r.decision}${r.why ? ` (${r.why})` : ''}` +
          (r.note ? ` — ${r.note}` : ''),
      ),
    );
  lines.push('  host defaults, for sample actions (default → with this binding):');
  for (const d of a.defaults) {
    const same = d.here.by === d.byDefault.by && d.here.decision === d.byDefault.decision;
    lines.push(
      terminalSafe(
        `    ${d.case} (${d.effect} ${d.target.kind}:${d.target.value}): ${d.byDefault.decision} ` +
          `(${d.byDefault.why})${same ? '' : ` → here ${d.here.decision} by ${d.here.by}`}`,
      ),
    );
  }
  lines.push('  floors (no binding lowers them):');
  for (const f of a.floors) lines.push(`    ${f}`);
  return lines;
}

/**
 * The sandbox request a run of `binding` would get, with `<runId>`/`<sessionId>` placeholders:
 * built by the run's own {@link runSandboxRequest}, so every bind `explain` lists is a bind of the launch.
 */
function plannedRequest(
  binding: Binding,
  runner: ResolvedRunner | undefined,
  p: RunAccess,
  resources: Resources,
  paths: ExplainPaths,
  backend: Backend,
) {
  const workspace = join(paths.dataDir, 'workspaces', '<runId>');
  const session = join(paths.dataDir, 'sessions', '<sessionId>');
  const entry = runner?.manifest.entry;
  const bundle =
    entry && 'node' in entry && /\.(c|m)?ts$/.test(entry.node)
      ? join(paths.dataDir, 'bundles', `<bundle of ${entry.node}>.mjs`)
      : undefined;
  // Mount mode binds each granted mount into the workspace (materialize.ts); copy mode copies it.
  const mounts =
    binding.workspace === 'mount'
      ? p.mounts.map((m) => {
          const source = resources.mounts.find((r) => r.id === m.id)?.path ?? `<mount ${m.id}>`;
          return {
            source: insideRoots(source, paths.mountRoots) ?? source,
            target: join(workspace, 'in', 'mounts', m.id),
            readOnly: m.readOnly,
          };
        })
      : [];
  const skills = p.skills.map((s) => ({
    source: join(workspace, 'in', 'skills', s.name),
    target: join(workspace, 'in', 'skills', s.name),
    readOnly: true,
  }));
  const needsGateway = p.models.length + p.knowledgeBases.length + p.mcpServers.length > 0;
  const sandbox = sandboxBackend(backend);
  return runSandboxRequest({
    backend,
    runId: '<runId>',
    launch: { command: process.execPath, args: [], cwd: workspace, env: {} },
    workspace,
    runnerDir: runner?.dir ?? `<runner ${binding.runner}>`,
    bundle,
    harnessDir: paths.harnessDir,
    readPaths: binding.readPaths.map((r) => insideRoots(r, paths.mountRoots) ?? r),
    binds: [...mounts, { source: session, target: session, readOnly: false }, ...skills],
    limits: p.limits,
    egressSocket: sandbox.startsEgressProxy(wantsEgressProxy(binding))
      ? join(paths.dataDir, 'sockets', '<runId>.sock')
      : undefined,
    gatewaySocket:
      needsGateway && sandbox.gatewayOnSocket ? join(paths.dataDir, 'sockets', '<runId>.gateway.sock') : undefined,
  });
}

/** Where a steering-`append` message goes with this runner (its manifest's `capabilities.append`). */
function appendNote(runnerId: string, manifest: { capabilities: { append: boolean } } | undefined): string {
  if (!manifest) return `runner ${runnerId} is missing`;
  return manifest.capabilities.append
    ? `a message during a run is delivered to the running ${runnerId} run; if it cannot take it, it waits its turn`
    : `runner ${runnerId} takes no messages during a run: they wait their turn, as with queue`;
}
