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
import { DISPATCH_DEFAULTS, HOST_INFO } from '../config/hostConfig.js';
import { inject, injectable } from '../di/container.js';
import { TOKENS } from '../di/tokens.js';
import { HostError } from '../errors.js';
import { resolveRunner, runnerCommand, type ResolvedRunner } from '../plugins/resolveRunner.js';
import { buildRunnerEnv } from '../process/envAllowlist.js';
import type { IsolationReport } from '../process/isolationReport.js';
import { prepareSandbox, startsEgressProxy } from '../sandbox/prepare.js';
import { probeMachine } from '../sandbox/probe.js';
import { startEgressProxy } from '../sandbox/egressProxy.js';
import { KB_MCP_SERVER } from '../gateway/mcp/kbEndpoint.js';
import { mountRunDiskQuota, type RunDiskQuota } from '../sandbox/runDiskQuota.js';
import { fsRequestHandler } from '../policy/fsRequests.js';
import { HARNESS_DIR } from '../harness/harnesses.js';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { notStartedOutcome, type RunOutcome } from '../process/outcome.js';
import { ClaimWaker, tryClaim } from '../state/claims.js';
import { reconcile } from '../recovery/reconcile.js';
import { unsupportedHostRequests } from '../rpc/hostRequestHandler.js';
import { AppendBatcher } from '../state/appendBatcher.js';
import { performEffect } from '../state/effects.js';
import { meteredUsage } from '../state/meteredUsage.js';
import { stateScope } from '../state/runnerState.js';
import { stateRequestHandler } from '../state/stateRequests.js';
import type { Store } from '../state/store.js';
import { DeltaRedactor } from '../secrets/deltaRedactor.js';
import type { Redactor } from '../secrets/redactor.js';
import type { Gateway, GatewayRunHandle } from '../gateway/gateway.js';
import { gatewayRequestHandler } from '../gateway/hostRequests.js';
import { sessionHistory } from './history.js';
import { materializeGrants } from './materialize.js';
import { checkSkills } from './skills.js';
import { describeError, superviseRun } from './superviseRun.js';
import { runSandboxRequest } from './runSandbox.js';
import { createRunWorkspace, removeRunWorkspace, sessionDir } from './workspace.js';
import { clearRunSetIdBits, dedicatedIdentity, giveToRunIdentity } from './runIdentityFiles.js';

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
      const paused = store.pausedReason(sessionId);
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
    // Ad-hoc runs respect the same store-decided claims as dispatched ones (one run per session).
    if (!(await this.waitForClaim(queued, plan, request.signal))) {
      const reason = 'cancelled while waiting for the session to be free';
      this.abandon(queued, reason);
      return notStartedOutcome(queued.runId, reason);
    }
    try {
      return await this.execute(queued, plan, event, request);
    } catch (error) {
      // The run never reached its runner (e.g. its entry failed to build): end it, with the reason.
      this.abandon(queued, `the run could not start: ${(error as Error).message}`, 'failed');
      throw error;
    }
  }

  /**
   * Wait until the store lets this queued run claim its session and a slot (docs/state.md,
   * "Claims"): woken by this process's run ends and other processes' commits; runs of dead
   * host processes are reclaimed through recovery. False when `signal` aborted first.
   */
  private async waitForClaim(queued: QueuedRun, plan: RunPlan, signal?: AbortSignal): Promise<boolean> {
    const { store } = this;
    const req = { runId: queued.runId, sessionId: queued.sessionId, bindingId: plan.binding.id, maxPerBinding: plan.binding.limits.maxConcurrentRuns, maxTotal: this.config.maxConcurrentRuns ?? DISPATCH_DEFAULTS.maxConcurrentRuns };
    for (;;) {
      if (signal?.aborted) return false;
      const verdict = tryClaim(store, req);
      if (verdict.ok) return true;
      if (verdict.deadOwners) {
        await reconcile(store);
        continue;
      }
      await new Promise<void>((resolve) => {
        const wake = () => {
          waker.close();
          signal?.removeEventListener('abort', wake);
          resolve();
        };
        const waker = new ClaimWaker(store, wake);
        signal?.addEventListener('abort', wake, { once: true });
        waker.start();
      });
    }
  }

  /** Start a queued run and supervise it to its end. */
  async execute(queued: QueuedRun, plan: RunPlan, event: ChatEvent, hooks: RunHooks = {}): Promise<RunOutcome> {
    const { store, config } = this;
    const { runId, sessionId } = queued;
    const { runner, binding, projection } = plan;
    const { command, args, bundle } = await runnerCommand(runner, join(config.dataDir, 'bundles'));
    const before = store.session(sessionId);
    const backend = binding.sandbox;
    const sessionFolder = sessionDir(config.dataDir, sessionId);
    // The disk quota: the workspace and the session folder become their own size-limited
    // filesystems before anything is written into them (docs/security-model.md, "Disk quota").
    const machine = probeMachine();
    let disk: RunDiskQuota | undefined;
    // The host uid a bwrap run's files belong to, when the host maps it to a dedicated one (runs as root).
    const runIds = backend === 'bwrap' ? dedicatedIdentity(machine.identity) : undefined;
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
    const rwSources = ws.granted.binds.filter((b) => !b.readOnly).map((b) => b.source);
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
    // An event of this run that cannot be stored (or streamed) fails this run, never the host.
    const fault = new AbortController();
    const batcher = new AppendBatcher(store, (error, event) => {
      this.log.error({ runId, err: error, event: event.type }, 'storing a run event failed');
      if (!fault.signal.aborted) fault.abort(new Error(`storing its ${event.type} event failed: ${describeError(error)}`));
    });
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
    if (startsEgressProxy(backend, binding.network)) {
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
      // The pinned harness CLIs (read-only under bwrap, see runSandbox.ts).
      const harnessDir = config.harnessDir ?? HARNESS_DIR;
      if (existsSync(harnessDir)) runnerEnv.PADDOCK_HARNESS_DIR = harnessDir;
      const readPaths = grantedReadPaths(binding.readPaths, config.mountRoots ?? []);
      // Copies the host made carry no setuid bits; what the run must use is its identity's (or refused, naming the grant).
      giveToRunIdentity(runIds, { dataDir: config.dataDir, workspace: ws.root, sessionFolder, sockets: [egressSocket, gateway?.socketPath], binds: ws.granted.binds, readPaths, bundle });
      sandbox = prepareSandbox({
        ...runSandboxRequest({
          backend,
          runId,
          launch: { command, args, cwd: ws.root, env: runnerEnv },
          workspace: ws.root,
          runnerDir: runner.dir,
          bundle,
          harnessDir,
          readPaths,
          binds: [...ws.granted.binds, { source: sessionFolder, target: sessionFolder, readOnly: false }, ...skills.binds],
          limits,
          egressSocket,
          gatewaySocket: gateway?.socketPath,
          egress: { allow: binding.network.egress, allowPrivate: binding.network.allowPrivate },
        }),
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
              mcp: Object.fromEntries([
                ...projection.mcpServers.map((m) => [m.id, `${gateway!.baseUrl}/mcp/${m.id}`]),
                // Granted knowledge bases as one host-served MCP server of search tools (docs/gateway.md).
                ...(projection.knowledgeBases.length ? [[KB_MCP_SERVER, `${gateway!.baseUrl}/mcp/${KB_MCP_SERVER}`]] : []),
              ]),
              tokenEnv: 'PADDOCK_RUN_TOKEN',
            },
          }
        : {}),
      limits: { wallClockMs: limits.wallClockMs, idleMs: limits.idleMs, maxUpdates: limits.maxUpdates, maxEventBytes: limits.maxEventBytes, diskBytes: limits.diskBytes, inodes: limits.inodes },
    };
    const log = this.log.child({ runId, runner: runner.manifest.id, bindingId: binding.id });
    const scope = stateScope(binding.id, sessionId, projection.state === 'binding' ? 'binding' : 'session');
    const deltas = new DeltaRedactor(this.redactor);
    let lastSeq = 1;
    const recordUpdate = (update: Update, seq: number) =>
      batcher.add(sessionId, { type: 'run.update', runId, data: { runnerSeq: seq, update } }, () => hooks.onUpdate?.(this.redactor.value(update), seq));
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
        // The run token dies with the result line (or any other end), not at teardown.
        onDecided: () => gateway?.revoke(),
        fault: fault.signal,
        hostRequests: stateRequestHandler(store.runnerState, scope, fsRequestHandler(ws.root, gatewayRequestHandler(this.gateway, gateway, unsupportedHostRequests))),
        log,
        onSpawn: (pid) =>
          store.append(sessionId, [
            {
              type: 'run.started',
              runId,
              data: { pid, pidStart: processStartTime(pid), recoveryDelivered: pending.map((p) => p.runId), ...(sandbox.containment?.paths ? { cgroups: sandbox.containment.paths } : {}) },
              audit: {
                type: 'run.spawned',
                actor: 'host',
                data: {
                  pid,
                  command: sandbox.launch.command,
                  args: sandbox.launch.args,
                  cwd: ws.root,
                  backend,
                  ...(sandbox.binds ? { binds: sandbox.binds } : {}),
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
        // Streamed to the caller only after the update is committed, redacted like the stored copy
        // (message text as one stream per message, so a secret split across deltas stays caught).
        onUpdate: (update, seq) => {
          lastSeq = seq;
          for (const safe of deltas.update(update)) recordUpdate(safe, seq);
        },
        onHostRequest: (method, verdict) => batcher.add(sessionId, requestEvent(runId, method, verdict, runner.manifest.id)),
      });
      for (const tail of deltas.end()) recordUpdate(tail, lastSeq);
      batcher.flush();
      stopWatching?.();
      // A limit the kernel held (ENOSPC) is named in the outcome, whatever the runner made of it.
      const diskNotes = disk?.notes() ?? [];
      if (diskNotes.length) outcome = { ...outcome, reason: `${outcome.reason}; ${diskNotes.join('; ')}` };
      // An update of the run's last turn that could not be stored: the run did not deliver what it said.
      if (fault.signal.aborted && !outcome.reason.startsWith('host failed')) {
        outcome = { ...outcome, status: outcome.status === 'completed' ? 'failed' : outcome.status, reason: `${outcome.reason}; then the host failed while handling the runner output: ${describeError(fault.signal.reason)}` };
      }
      // The run's usage is what the host metered; the runner's own claim is kept beside it, labelled.
      outcome = { ...outcome, usage: meteredUsage(store, runId, outcome.result?.usage) };
      outcome = this.recordEnd(sessionId, runId, outcome, runner.manifest.id);
      try {
        return this.redactor.value(outcome);
      } catch (error) {
        // The stored copy was redacted by the store; a value the redactor cannot walk is not handed out.
        return { ...outcome, result: undefined, reason: `${outcome.reason}; the result could not be redacted for display: ${describeError(error)}` };
      }
    } finally {
      stopWatching?.();
      await egress?.close();
      await gateway?.close();
      batcher.flush();
      // Nothing the run leaves where the host or a user may execute it keeps a setuid/setgid bit.
      try {
        const cleared = clearRunSetIdBits([...rwSources, sessionFolder, ...(config.keepWorkspaces ? [ws.root] : [])], runIds);
        if (cleared.length > 0) {
          store.transaction(() => store.audit.append({ type: 'run.setid_cleared', actor: 'host', sessionId, runId, data: { files: cleared } }));
          log.warn({ files: cleared }, 'setuid/setgid bits cleared from files the run left');
        }
      } catch (error) {
        // Never lose the run's outcome over it; audited and logged as an error instead.
        store.transaction(() => store.audit.append({ type: 'run.setid_cleared', actor: 'host', sessionId, runId, data: { error: String(error) } }));
        log.error({ err: error }, 'clearing setuid/setgid bits after the run failed');
      }
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

  /**
   * Record the run's end (and its confirmed external pointers). A result the store refuses (odd
   * data that got past the protocol checks) still ends the run, as failed, without the result:
   * the outcome is always recorded.
   */
  private recordEnd(sessionId: string, runId: string, outcome: RunOutcome, runnerId: string): RunOutcome {
    const write = (o: RunOutcome) => {
      const usage = o.usage ?? o.result?.usage;
      const external = o.result?.external;
      const data = { status: o.status, reason: o.reason, result: o.result, usage, exitCode: o.exitCode, signal: o.signal };
      this.store.append(sessionId, [
        { type: 'run.ended', runId, data, audit: { type: 'run.ended', actor: 'host', data: { status: o.status, reason: o.reason, exitCode: o.exitCode, signal: o.signal, survivors: o.survivors } } },
        ...(external && CONFIRMING.has(o.status)
          ? [{ type: 'external.saved' as const, runId, data: { external }, audit: { type: 'external.saved', actor: `runner:${runnerId}`, data: { external } } }]
          : []),
      ]);
    };
    try {
      write(outcome);
      return outcome;
    } catch (error) {
      this.log.error({ runId, err: error }, 'storing the run result failed');
      const failed: RunOutcome = { ...outcome, status: 'failed', result: undefined, reason: `${outcome.reason}; the host could not store the runner's result: ${describeError(error)}` };
      write(failed);
      return failed;
    }
  }
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
