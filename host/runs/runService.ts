import type { Logger } from 'pino';
import { processStartTime } from '../../sdk/process/procTable.js';
import { buildRunParams, newRunId } from '../../sdk/protocol/runParams.js';
import type { RpcError } from '../../sdk/protocol/rpcError.js';
import type { BindingProjectionInput, ChatEvent, ChatEventInput, Resume, Update } from '../../sdk/protocol/types.js';
import { ChatEventSchema } from '../../sdk/protocol/schemas/event.js';
import { indexResources, projectGrants, type Projection, type ResourceIndex } from '../authz/projection.js';
import { GrantsSchema, BindingSchema, type Binding } from '../bindings/schema.js';
import { insideRoots } from '../bindings/validateConfig.js';
import type { HostConfig } from '../config/hostConfig.js';
import { HOST_INFO } from '../config/hostConfig.js';
import { inject, injectable } from '../di/container.js';
import { TOKENS } from '../di/tokens.js';
import { HostError } from '../errors.js';
import { resolveRunner, runnerCommand, type ResolvedRunner } from '../plugins/resolveRunner.js';
import { buildRunnerEnv } from '../process/envAllowlist.js';
import type { IsolationReport } from '../process/isolationReport.js';
import { prepareSandbox } from '../sandbox/prepare.js';
import { startEgressProxy } from '../sandbox/egressProxy.js';
import { probeMachine } from '../sandbox/probe.js';
import { mountRunDiskQuota, type RunDiskQuota } from '../sandbox/runDiskQuota.js';
import { fsRequestHandler } from '../policy/fsRequests.js';
import { PACKAGE_ROOT } from '../config/packageRoot.js';
import { HARNESS_DIR } from '../harness/harnesses.js';
import { existsSync, mkdirSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import type { RunOutcome } from '../process/outcome.js';
import { unsupportedHostRequests } from '../rpc/hostRequestHandler.js';
import { AppendBatcher } from '../state/appendBatcher.js';
import { performEffect } from '../state/effects.js';
import { stateScope } from '../state/runnerState.js';
import { stateRequestHandler } from '../state/stateRequests.js';
import type { Store } from '../state/store.js';
import type { Redactor } from '../secrets/redactor.js';
import type { Gateway, GatewayRunHandle } from '../gateway/gateway.js';
import { gatewayRequestHandler } from '../gateway/hostRequests.js';
import { sessionHistory } from './history.js';
import { materializeGrants } from './materialize.js';
import { checkSkills } from './skills.js';
import { superviseRun } from './superviseRun.js';
import { createRunWorkspace, removeRunWorkspace, sessionDir } from './workspace.js';

/** Everything decided about a run before it starts: runner, binding, config and projection. */
export interface RunPlan {
  runner: ResolvedRunner;
  binding: Binding;
  projection: Projection;
  /** Resources as they were when the projection was computed (for copying into the workspace). */
  resources: ResourceIndex;
}

/** Hooks and inputs of one run's execution. */
export interface RunHooks {
  signal?: AbortSignal;
  onUpdate?(update: Update, seq: number): void;
  /** Called once the run id is known, before the runner starts. */
  onStart?(info: { runId: string; sessionId: string; runner: string; dir: string; isolation: IsolationReport; resume: Resume | undefined }): void;
}

/** One ad-hoc run of a runner, as `paddock run` and `paddock demo` start it. */
export interface AdHocRunRequest extends RunHooks {
  /** Runner folder or name. */
  runner: string;
  event: ChatEventInput;
  config?: Record<string, unknown>;
  /** Sandbox backend (default `process`). */
  sandbox?: 'process' | 'bwrap';
}

/** A run recorded as queued. */
export interface QueuedRun {
  runId: string;
  sessionId: string;
  goalRevision: number;
}

/** Statuses whose `external` pointers count as confirmed by the harness (docs/state.md, rule 5). */
const CONFIRMING = new Set(['completed', 'cancelled']);

/** The key of a conversation within a binding: the session is (binding, this key). */
export function conversationKey(event: ChatEvent): string {
  return `${event.platform}:${event.bot}:${event.conversation.type}:${event.conversation.id}`;
}

/** A short, secret-free record of a projection for the audit trail. */
export function summarizeProjection(p: Projection): Record<string, unknown> {
  return {
    hostRequests: p.hostRequests,
    models: p.models.map((m) => m.id),
    knowledgeBases: p.knowledgeBases.map((k) => k.id),
    mcpServers: p.mcpServers.map((s) => ({ id: s.id, allowedTools: s.allowedTools ?? '*', deniedTools: s.deniedTools })),
    skills: p.skills.map((s) => s.id),
    artifacts: p.artifacts.map((a) => a.id),
    mounts: p.mounts.map((m) => ({ id: m.id, readOnly: m.readOnly })),
    state: p.state,
    fs: p.fs,
    approval: p.approval,
    history: p.history,
  };
}

/**
 * Starts runs: records everything in the store (session, message, run lifecycle, every update
 * and request decision, the outcome, confirmed pointers), makes the workspace as a logged
 * effect, supervises the runner against the run's projection, cleans up.
 */
@injectable()
export class RunService {
  constructor(
    @inject(TOKENS.HostConfig) private readonly config: HostConfig,
    @inject(TOKENS.Logger) private readonly log: Logger,
    @inject(TOKENS.Store) private readonly store: Store,
    @inject(TOKENS.Redactor) private readonly redactor: Redactor,
    @inject(TOKENS.Gateway) private readonly gateway: Gateway,
  ) {}

  /**
   * The plan of a run with no binding: the operator who starts it acts as the admin and grants
   * the host requests the runner's manifest asks for (state per session), and no resources.
   */
  planAdHoc(runnerRef: string, config: Record<string, unknown> = {}, sandbox: 'process' | 'bwrap' = 'process'): RunPlan {
    const runner = resolveRunner(runnerRef, this.config.runnerDirs);
    const asks = runner.manifest.capabilities.hostRequests;
    const binding = BindingSchema.parse({
      id: `adhoc-${runner.manifest.id}`,
      runner: runner.manifest.id,
      config,
      sandbox,
      grants: GrantsSchema.parse({
        state: asks.some((m) => m.startsWith('state/')) ? 'session' : 'none',
        fs: asks.includes('fs/write') ? 'readwrite' : asks.includes('fs/read') ? 'read' : 'none',
        approval: asks.includes('approval/request'),
      }),
    });
    const resources = indexResources({ models: [], knowledgeBases: [], mcpServers: [], skills: [], artifacts: [], mounts: [] });
    return { runner, binding, resources, projection: projectGrants(runner.manifest, binding, resources, this.config.limits) };
  }

  /**
   * Record a message and its queued run (one transaction; callers may wrap it in theirs, e.g.
   * dispatch adds its dedupe row). A paused session is refused.
   */
  queue(plan: RunPlan, event: ChatEvent, sessionId: string, goalRevision = 0): QueuedRun {
    const { store } = this;
    return store.transaction(() => {
      const paused = store.db.prepare('SELECT paused_reason FROM sessions WHERE id = ?').pluck().get(sessionId) as string | null;
      if (paused) {
        throw new HostError('SESSION_PAUSED', `session ${sessionId} is paused: ${paused}`, { sessionId, openEffects: store.session(sessionId).openEffects });
      }
      const runId = newRunId();
      const { manifest } = plan.runner;
      store.append(sessionId, [
        { type: 'message.received', data: { event } },
        {
          type: 'run.queued',
          runId,
          data: { runner: manifest.id, goalRevision, attempt: 1, bindingId: plan.binding.id, host: { pid: process.pid, start: processStartTime(process.pid) } },
          audit: {
            type: 'run.queued',
            actor: 'host',
            data: { runner: manifest.id, version: manifest.version, bindingId: plan.binding.id, goalRevision, projection: summarizeProjection(plan.projection) },
          },
        },
      ]);
      return { runId, sessionId, goalRevision };
    });
  }

  /**
   * End a queued run that never reached its runner: `cancelled` (binding disabled, superseded,
   * cancelled while waiting) or `failed` (it could not start).
   */
  abandon(run: QueuedRun, reason: string, status: 'cancelled' | 'failed' = 'cancelled'): void {
    this.store.append(run.sessionId, [
      {
        type: 'run.ended',
        runId: run.runId,
        data: { status, reason, exitCode: null, signal: null },
        audit: { type: 'run.ended', actor: 'host', data: { status, reason, started: false } },
      },
    ]);
  }

  /** Run one event through a runner with no binding (session = `adhoc-<runner>` × conversation). */
  async runAdHoc(request: AdHocRunRequest): Promise<RunOutcome> {
    const plan = this.planAdHoc(request.runner, request.config, request.sandbox);
    const event = ChatEventSchema.parse(request.event);
    const { sessionId } = this.store.ensureSession(plan.binding.id, conversationKey(event));
    const queued = this.queue(plan, event, sessionId);
    return this.execute(queued, plan, event, request);
  }

  /** Start a queued run and supervise it to its end. */
  async execute(queued: QueuedRun, plan: RunPlan, event: ChatEvent, hooks: RunHooks = {}): Promise<RunOutcome> {
    const { store, config } = this;
    const { runId, sessionId } = queued;
    const { runner, binding, projection } = plan;
    const { command, args } = await runnerCommand(runner);
    const before = store.session(sessionId);
    const backend = binding.sandbox;
    const sessionFolder = sessionDir(config.dataDir, sessionId);
    // The disk quota: the workspace and the session folder become their own size-limited
    // filesystems before anything is written into them (docs/security-model.md, "Disk quota").
    const machine = probeMachine();
    let disk: RunDiskQuota | undefined;
    const ws = performEffect(store, sessionId, runId, { kind: 'workspace.create', target: runId, probe: { path: `${config.dataDir}/workspaces/${runId}` } }, () => {
      if (machine.diskQuota.available) {
        disk = mountRunDiskQuota(machine.diskQuota, config.dataDir, { runId, sessionId }, { workspaceRoot: join(config.dataDir, 'workspaces', runId), sessionFolder }, projection.limits);
      }
      try {
        const created = createRunWorkspace(config.dataDir, runId);
        return { ...created, granted: materializeGrants(created, projection, plan.resources, binding.workspace, config.mountRoots ?? [], backend === 'bwrap') };
      } catch (error) {
        disk?.release({ keepWorkspace: false });
        throw error;
      }
    });
    // Every interruption not yet reported goes to this run, once (the latest one names the run).
    const pending = before.pendingRecovery;
    const latest = pending.at(-1);
    const resume: Resume | undefined =
      before.external || latest
        ? {
            external: before.external ?? undefined,
            recovery: latest
              ? {
                  interruptedRunId: latest.runId,
                  summary: pending.map((p) => `run ${p.runId} was interrupted: ${p.reason}`).join('; '),
                  effects: pending.flatMap((p) => p.effects),
                }
              : undefined,
          }
        : undefined;
    const limits = projection.limits;
    const batcher = new AppendBatcher(store);
    // Something the host tells the run's chat: stored like an update, streamed to the caller.
    const notice = (level: 'info' | 'warn' | 'error', message: string) => {
      const update: Update = { kind: 'log', level, message: this.redactor.text(message) };
      batcher.add(sessionId, { type: 'run.notice', runId, data: { update } }, () => hooks.onUpdate?.(update, 0));
    };
    const skills = checkSkills(store, ws.granted.skills, backend, (changed) => {
      store.transaction(() => store.audit.append({ type: 'skill.changed', actor: 'host', sessionId, runId, data: changed }));
      notice('warn', `skill ${changed.skill} changed since it was applied (${changed.recorded ?? 'never recorded'} → ${changed.digest}); the run got the current content`);
    });
    // The run's only network door, when its binding allows destinations (bwrap only: the process
    // backend has the host's network anyway, and says so).
    let egress: { close(): Promise<void> } | undefined;
    let egressSocket: string | undefined;
    if (backend === 'bwrap' && binding.network.egress.length > 0) {
      mkdirSync(join(config.dataDir, 'sockets'), { recursive: true, mode: 0o700 });
      egressSocket = join(config.dataDir, 'sockets', `${runId}.sock`);
      egress = await startEgressProxy(egressSocket, { allow: binding.network.egress, allowPrivate: binding.network.allowPrivate }, (decision) =>
        store.transaction(() => store.audit.append({ type: decision.allowed ? 'egress.allowed' : 'egress.denied', actor: `runner:${runner.manifest.id}`, sessionId, runId, data: decision })),
      );
    }
    // The host gateway: models, knowledge bases and MCP tools, behind a token that dies with the run.
    let gateway: GatewayRunHandle | undefined;
    const needsGateway = projection.models.length + projection.knowledgeBases.length + projection.mcpServers.length > 0;
    let sandbox: ReturnType<typeof prepareSandbox>;
    try {
      if (needsGateway) {
        gateway = await this.gateway.openRun({
          claims: { runId, sessionId, bindingId: binding.id, runnerId: runner.manifest.id },
          projection,
          resources: plan.resources,
          budget: binding.limits,
          backend,
          sandboxLimits: limits,
          notice,
        });
      }
      const runnerEnv = buildRunnerEnv({ hostEnv: process.env, home: ws.home, tmpDir: ws.tmp, runId, extra: runner.manifest.env });
      if (gateway) Object.assign(runnerEnv, { PADDOCK_RUN_TOKEN: gateway.token, PADDOCK_GATEWAY_URL: gateway.baseUrl, NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost' });
      // The pinned harness CLIs (read-only under bwrap, see readOnlyPaths).
      const harnessDir = config.harnessDir ?? HARNESS_DIR;
      if (existsSync(harnessDir)) runnerEnv.PADDOCK_HARNESS_DIR = harnessDir;
      sandbox = prepareSandbox({
      backend,
      runId,
      launch: {
        command,
        args,
        cwd: ws.root,
        env: runnerEnv,
      },
      workspace: ws.root,
      readOnly: [...readOnlyPaths(runner.dir, args, config.harnessDir ?? HARNESS_DIR), ...grantedReadPaths(binding.readPaths, config.mountRoots ?? [])],
      binds: [...ws.granted.binds, { source: sessionFolder, target: sessionFolder, readOnly: false }, ...skills.binds],
      limits,
      egressSocket,
      gatewaySocket: gateway?.socketPath,
      egress: { allow: binding.network.egress, allowPrivate: binding.network.allowPrivate },
      disk: disk?.applied,
    });
    } catch (error) {
      await egress?.close();
      await gateway?.close();
      disk?.release({ keepWorkspace: config.keepWorkspaces === true });
      if (!config.keepWorkspaces) performEffect(store, sessionId, runId, { kind: 'workspace.remove', target: runId, probe: { path: ws.root } }, () => removeRunWorkspace(ws));
      throw error;
    }
    hooks.onStart?.({ runId, sessionId, runner: runner.manifest.id, dir: runner.dir, isolation: sandbox.report, resume });

    const bindingProjection: BindingProjectionInput = {
      bindingId: binding.id,
      runner: { id: runner.manifest.id, version: runner.manifest.version },
      config: binding.config,
      hostRequests: projection.hostRequests,
      models: projection.models,
      knowledgeBases: projection.knowledgeBases,
      mcpServers: projection.mcpServers,
      skills: skills.handles,
      artifacts: ws.granted.artifacts,
      mounts: ws.granted.mounts,
      ...(projection.state !== 'none' ? { stateScope: projection.state } : {}),
      history: sessionHistory(store.readEvents(sessionId), runId, projection.history, (text) => this.redactor.text(text)),
      workspace: { root: ws.root, in: ws.in, out: ws.out, tmp: ws.tmp, session: sessionFolder },
      ...(gateway
        ? {
            gateway: {
              baseUrl: gateway.baseUrl,
              anthropicBaseUrl: gateway.baseUrl,
              openaiBaseUrl: `${gateway.baseUrl}/v1`,
              mcp: Object.fromEntries(projection.mcpServers.map((m) => [m.id, `${gateway!.baseUrl}/mcp/${m.id}`])),
              tokenEnv: 'PADDOCK_RUN_TOKEN',
            },
          }
        : {}),
      limits: { wallClockMs: limits.wallClockMs, idleMs: limits.idleMs, maxUpdates: limits.maxUpdates, maxEventBytes: limits.maxEventBytes, diskBytes: limits.diskBytes, inodes: limits.inodes },
    };
    const log = this.log.child({ runId, runner: runner.manifest.id, bindingId: binding.id });
    const scope = stateScope(binding.id, sessionId, projection.state === 'binding' ? 'binding' : 'session');
    let outcome: RunOutcome | undefined;
    const stopWatching = disk?.watch();
    try {
      outcome = await superviseRun({
        launch: sandbox.launch,
        containment: sandbox.containment,
        params: buildRunParams({ runId, sessionId, event, binding: bindingProjection, resume, wallClockMs: limits.wallClockMs, goalRevision: queued.goalRevision }),
        limits,
        requestLimits: projection.requestLimits,
        host: HOST_INFO,
        signal: hooks.signal,
        hostRequests: stateRequestHandler(store.runnerState, scope, fsRequestHandler(ws.root, gatewayRequestHandler(this.gateway, gateway, unsupportedHostRequests))),
        log,
        onSpawn: (pid) =>
          store.append(sessionId, [
            {
              type: 'run.started',
              runId,
              data: { pid, pidStart: processStartTime(pid), recoveryDelivered: pending.map((p) => p.runId) },
              audit: {
                type: 'run.spawned',
                actor: 'host',
                data: {
                  pid,
                  command: sandbox.launch.command,
                  args: sandbox.launch.args,
                  cwd: ws.root,
                  backend,
                  isolation: sandbox.report,
                  limits,
                  requestLimits: projection.requestLimits,
                  skills: skills.handles.map(({ id, name, version, digest, changed }) => ({ id, name, version: version ?? null, digest, changed })),
                  gateway: gateway ? { baseUrl: gateway.baseUrl, models: projection.models.map((m) => m.id), mcpServers: projection.mcpServers.map((m) => m.id), knowledgeBases: projection.knowledgeBases.map((k) => k.id) } : null,
                },
              },
            },
          ]),
        redact: (text) => this.redactor.text(text),
        // Streamed to the caller only after the update is committed, redacted like the stored copy.
        onUpdate: (update, seq) =>
          batcher.add(sessionId, { type: 'run.update', runId, data: { runnerSeq: seq, update } }, () => hooks.onUpdate?.(this.redactor.value(update), seq)),
        onHostRequest: (method, verdict) => batcher.add(sessionId, requestEvent(runId, method, verdict, runner.manifest.id)),
      });
      batcher.flush();
      stopWatching?.();
      // A limit the kernel held (ENOSPC) is named in the outcome, whatever the runner made of it.
      const diskNotes = disk?.notes() ?? [];
      if (diskNotes.length) outcome = { ...outcome, reason: `${outcome.reason}; ${diskNotes.join('; ')}` };
      const usage = outcome.result?.usage;
      const external = outcome.result?.external;
      const data = { status: outcome.status, reason: outcome.reason, result: outcome.result, usage, exitCode: outcome.exitCode, signal: outcome.signal };
      store.append(sessionId, [
        { type: 'run.ended', runId, data, audit: { type: 'run.ended', actor: 'host', data: { status: outcome.status, reason: outcome.reason, exitCode: outcome.exitCode, signal: outcome.signal, survivors: outcome.survivors } } },
        ...(external && CONFIRMING.has(outcome.status)
          ? [{ type: 'external.saved' as const, runId, data: { external }, audit: { type: 'external.saved', actor: `runner:${runner.manifest.id}`, data: { external } } }]
          : []),
      ]);
      return this.redactor.value(outcome);
    } finally {
      stopWatching?.();
      await egress?.close();
      await gateway?.close();
      batcher.flush();
      try {
        disk?.release({ keepWorkspace: config.keepWorkspaces === true });
      } catch (error) {
        // Left mounted: the next host start unmounts it (the outcome above stands).
        this.log.error({ runId, err: error }, 'could not release the run\'s disk quota');
      }
      if (!config.keepWorkspaces) {
        performEffect(store, sessionId, runId, { kind: 'workspace.remove', target: runId, probe: { path: ws.root } }, () => removeRunWorkspace(ws));
      }
    }
  }
}

/** What a sandboxed runner must read: its folder, the host's node_modules and harness CLIs, and absolute files of its command line not already inside those. */
function readOnlyPaths(runnerDir: string, args: string[], harnessDir: string): string[] {
  const modules = join(PACKAGE_ROOT, 'node_modules');
  const dirs = [runnerDir, ...[modules, harnessDir].filter((d) => existsSync(d))];
  const covered = (path: string) => dirs.some((d) => path === d || path.startsWith(`${d}/`));
  return [...dirs, ...args.filter((a) => isAbsolute(a) && existsSync(a) && !covered(a))];
}

/** The binding's read paths, checked again now (roots or links under them may have changed since apply), as real paths. */
function grantedReadPaths(paths: string[], roots: readonly string[]): string[] {
  return paths.map((path) => {
    const real = insideRoots(path, roots);
    if (!real) throw new Error(`read path ${path} is no longer an existing path under an allowed mount root`);
    return real;
  });
}

/** The event (and, for a refusal, the audit record naming who denied what) of one runner request. */
function requestEvent(runId: string, method: string, verdict: 'accepted' | RpcError, runnerId: string) {
  if (verdict === 'accepted') return { type: 'run.request' as const, runId, data: { method, decision: 'accepted' as const } };
  const deniedBy = (verdict.data as { deniedBy?: string } | undefined)?.deniedBy;
  const decision = { code: verdict.code, reason: verdict.message };
  return {
    type: 'run.request' as const,
    runId,
    data: { method, decision },
    audit: { type: 'policy.denied', actor: 'host', data: { method, requestedBy: `runner:${runnerId}`, ...decision, ...(deniedBy ? { deniedBy } : {}), details: verdict.data ?? null } },
  };
}
