import { indexResources, projectGrants, type Projection } from '../authz/projection.js';
import type { HostLimits } from '../config/limits.js';
import type { RunnerCatalog } from '../plugins/catalog.js';
import type { IsolationReport } from '../process/isolationReport.js';
import { RunnerManifestSchema } from '../plugins/manifest.js';
import { probeMachine } from '../sandbox/probe.js';
import { isolationReport } from '../sandbox/prepare.js';
import { decideSandbox } from '../sandbox/decide.js';
import type { Binding, Resources } from './schema.js';


const EMPTY_MANIFEST = RunnerManifestSchema.parse({ id: 'missing', name: 'missing', version: '0', protocolVersion: 1, entry: { node: 'index.js' } });

/** What a run of a binding may touch, in the worst case, as `paddock explain` prints it. */
export interface Explanation {
  binding: { id: string; enabled: boolean; runner: string; route: Binding['route']; steering: Binding['steering']; approvalPolicy: Binding['approvalPolicy'] };
  runner: { id: string; version: string; dir: string; risk: string } | { id: string; missing: string };
  /** The projection every run gets (absent when the runner is missing). */
  projection?: Omit<Projection, 'withheld' | 'limits' | 'requestLimits'>;
  /** What the runner may do by itself, outside host requests (declared by its manifest). */
  effects: string[];
  limits: Record<string, number>;
  workspace: { mode: Binding['workspace']; layout: string; contents: string[] };
  network: string;
  sandbox: { profile: string; available: boolean; backend?: string; degraded: string[]; refusal?: string; report?: IsolationReport };
  /** The worst a run can do, from the backend's own report and launch recipe. */
  worstCase: { readable: string[]; writable: string[]; network: string; credentials: string };
  withheld: Projection['withheld'];
}

/**
 * Explain a binding from the same code that enforces it: the projection is computed by
 * `projectGrants()`, the isolation facts come from the backend's own report.
 */
export function explainBinding(binding: Binding, catalog: RunnerCatalog, resources: Resources, hostLimits: HostLimits): Explanation {
  const runner = catalog.runners.get(binding.runner);
  const machine = probeMachine();
  const decision = decideSandbox(binding, machine);
  // One projection serves both the isolation report (its limits) and the explanation below.
  const p = projectGrants(runner?.manifest ?? EMPTY_MANIFEST, binding, indexResources(resources), hostLimits);
  const report = decision.ok ? isolationReport(decision.backend, p.limits, machine, machine.cgroups) : undefined;
  const strong = decision.ok && decision.backend === 'bwrap';
  const rwMounts = binding.workspace === 'mount' ? binding.grants.mounts.filter((id) => resources.mounts.find((m) => m.id === id)?.mode === 'rw') : [];
  const worstCase = {
    readable: strong
      ? ['/usr and the /bin, /lib links', '/etc: passwd, group, ld.so.*, ssl, ca-certificates, alternatives, localtime, nsswitch.conf', `the runner folder${runner ? ` (${runner.dir})` : ''}`, "the host's node_modules and harness CLIs (.harness)", 'the run workspace and its session folder', ...(binding.workspace === 'mount' ? binding.grants.mounts.map((id) => `mount ${id}`) : []), ...binding.readPaths.map((p) => `${p} (readPaths)`)]
      : [`everything the host user (uid ${process.getuid?.() ?? '?'}) can read`],
    writable: strong ? ['the run workspace', 'the session folder (kept across the session\'s runs)', ...rwMounts.map((id) => `mount ${id} (rw)`)] : [`everything the host user (uid ${process.getuid?.() ?? '?'}) can write`],
    network: strong ? 'none: own network namespace with only loopback' : 'any destination the host can reach',
    credentials: `none of the host's: the environment is PATH, locale, HOME, TMPDIR, PADDOCK_RUN_ID${runner && Object.keys(runner.manifest.env).length ? ` and the manifest's literal ${Object.keys(runner.manifest.env).join(', ')}` : ''}${
      p.models.length + p.knowledgeBases.length + p.mcpServers.length > 0 ? '; plus a run token (PADDOCK_RUN_TOKEN) good only at the host gateway, only for this run\'s grants and budget, revoked when the run ends' : ''
    }`,
  };
  const base = {
    binding: { id: binding.id, enabled: binding.enabled, runner: binding.runner, route: binding.route, steering: binding.steering, approvalPolicy: binding.approvalPolicy },
    sandbox: {
      profile: binding.sandbox,
      available: decision.ok,
      degraded: decision.ok ? decision.degraded : [],
      ...(decision.ok ? { backend: decision.backend } : { refusal: decision.message }),
      ...(report ? { report } : {}),
    },
    worstCase,
    network: report
      ? report.notEnforced.some((g) => g.startsWith('network'))
        ? 'NOT isolated: the runner can open any connection (the process backend has no network sandbox)'
        : 'none: own network namespace with only loopback'
      : `none: runs are refused (${decision.ok ? '' : decision.message})`,
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
  const { withheld, limits, requestLimits, ...projection } = p;
  const contents = [
    ...p.artifacts.map((a) => `in/artifacts/${a.name} (copy of artifact ${a.id})`),
    ...p.skills.map((s) => `in/skills/${s.name}/ (copy of skill ${s.id})`),
    ...p.mounts.map((m) => `in/mounts/${m.id}/ (${binding.workspace === 'mount' ? 'link to' : 'copy of'} mount ${m.id}, ${m.readOnly ? 'read-only' : 'read-write'}${binding.workspace === 'mount' && m.readOnly && report?.backend === 'process' ? ' — read-only NOT enforced by the process backend' : binding.workspace === 'mount' ? ' — bound by bwrap' : ''})`),
  ];
  return {
    ...base,
    runner: { id: runner.manifest.id, version: runner.manifest.version, dir: runner.dir, risk: runner.manifest.risk },
    projection,
    effects: runner.manifest.effects,
    limits: {
      wallClockMs: limits.wallClockMs,
      idleMs: limits.idleMs,
      maxUpdates: limits.maxUpdates,
      maxEventBytes: limits.maxEventBytes,
      maxStdoutBytes: limits.maxStdoutBytes,
      maxStderrBytes: limits.maxStderrBytes,
      ...requestLimits,
      maxConcurrentRuns: binding.limits.maxConcurrentRuns,
      maxQueued: binding.limits.maxQueued,
      // Model budgets, enforced by the gateway (docs/gateway.md).
      modelTokensPerRun: binding.limits.modelTokensPerRun,
      ...(binding.limits.modelCostPerRunUsd !== undefined ? { modelCostPerRunUsd: binding.limits.modelCostPerRunUsd } : {}),
      ...(binding.limits.modelTokensPerDay !== undefined ? { modelTokensPerDay: binding.limits.modelTokensPerDay } : {}),
      ...(binding.limits.modelCostPerDayUsd !== undefined ? { modelCostPerDayUsd: binding.limits.modelCostPerDayUsd } : {}),
    },
    workspace: { mode: binding.workspace, layout: '<data>/workspaces/<runId>/{in,out,tmp,home} (cwd = root, HOME = home, TMPDIR = tmp)', contents },
    withheld,
  };
}

/** A readable rendering of an explanation. */
export function renderExplanation(e: Explanation): string {
  const lines: string[] = [];
  const list = (items: string[]) => (items.length ? items.join(', ') : 'none');
  lines.push(`binding ${e.binding.id} (${e.binding.enabled ? 'enabled' : 'DISABLED'}) → runner ${e.binding.runner}`);
  lines.push(`  route: ${JSON.stringify(e.binding.route)} · steering ${e.binding.steering} · approvals ${e.binding.approvalPolicy}`);
  if ('missing' in e.runner) lines.push(`  runner: ${e.runner.missing}`);
  else lines.push(`  runner: ${e.runner.id} ${e.runner.version} (${e.runner.dir})${e.runner.risk ? ` — risk: ${e.runner.risk}` : ''}`);
  if (e.projection) {
    const p = e.projection;
    lines.push('may call (host requests):', `  ${list(p.hostRequests)}`);
    lines.push('resources:');
    lines.push(`  models: ${list(p.models.map((m) => `${m.id} (${m.provider === 'scripted' ? 'SCRIPTED test model, not a real LLM:' : m.provider} ${m.model})`))}${p.models.length ? ' — through the host gateway only' : ''}`);
    lines.push(`  knowledge bases: ${list(p.knowledgeBases.map((k) => k.id))}`);
    lines.push(`  MCP servers: ${list(p.mcpServers.map((s) => `${s.id} [tools: ${s.allowedTools ? list(s.allowedTools) : 'all listed'}${s.deniedTools.length ? `; never: ${s.deniedTools.join(', ')}` : ''}]`))}`);
    lines.push(`  skills: ${list(p.skills.map((s) => s.id))} · artifacts: ${list(p.artifacts.map((a) => a.id))} · mounts: ${list(p.mounts.map((m) => `${m.id} (${m.readOnly ? 'ro' : 'rw'})`))}`);
    lines.push(`  state: ${p.state} · fs requests: ${p.fs} · approval requests: ${p.approval ? 'yes' : 'no'}`);
    lines.push(`  history: ${p.history === 'none' ? 'none (each run sees only its own message)' : `the last ${[p.history.messages !== undefined && `${p.history.messages} messages`, p.history.tokens !== undefined && `≤ ${p.history.tokens} tokens`].filter(Boolean).join(', ')} of this conversation (user messages and completed answers, redacted)`}`);
  }
  lines.push(`effects the runner may cause by itself: ${list(e.effects)}`);
  lines.push(`limits: ${Object.entries(e.limits).map(([k, v]) => `${k}=${v}`).join(' ')}`);
  lines.push(`workspace (${e.workspace.mode}): ${e.workspace.layout}`);
  for (const c of e.workspace.contents) lines.push(`  ${c}`);
  lines.push(`network: ${e.network}`);
  lines.push('worst case:', `  can read: ${e.worstCase.readable.join('; ')}`, `  can write: ${e.worstCase.writable.join('; ')}`, `  network: ${e.worstCase.network}`, `  credentials: ${e.worstCase.credentials}`);
  for (const d of e.sandbox.degraded) lines.push(`  DEGRADED: ${d}`);
  if (e.sandbox.report) {
    lines.push(`sandbox: ${e.sandbox.profile}${e.sandbox.backend !== e.sandbox.profile ? ` → ${e.sandbox.backend}` : ''} (${e.sandbox.report.strength})`);
    for (const g of e.sandbox.report.enforced) lines.push(`  enforced: ${g}`);
    for (const g of e.sandbox.report.notEnforced) lines.push(`  NOT enforced: ${g}`);
  } else lines.push(`sandbox: ${e.sandbox.refusal ?? `${e.sandbox.profile} is NOT available`}: runs of this binding are refused`);
  if (e.withheld.length) {
    lines.push('granted or requested but withheld:');
    for (const w of e.withheld) lines.push(`  ${w.what} — ${w.why}`);
  }
  return lines.join('\n');
}
