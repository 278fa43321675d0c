import type { Logger } from 'pino';
import { processStartTime } from '../../sdk/process/procTable.js';
import { buildRunParams, newRunId } from '../../sdk/protocol/runParams.js';
import type { RpcError } from '../../sdk/protocol/rpcError.js';
import type { BindingProjectionInput, ChatEventInput, Resume, Update } from '../../sdk/protocol/types.js';
import { ChatEventSchema } from '../../sdk/protocol/schemas/event.js';
import type { HostConfig } from '../config/hostConfig.js';
import { HOST_INFO } from '../config/hostConfig.js';
import { inject, injectable } from '../di/container.js';
import { TOKENS } from '../di/tokens.js';
import { HostError } from '../errors.js';
import { resolveRunner, runnerCommand } from '../plugins/resolveRunner.js';
import { buildRunnerEnv } from '../process/envAllowlist.js';
import { PROCESS_BACKEND_REPORT, type IsolationReport } from '../process/isolationReport.js';
import type { RunOutcome } from '../process/outcome.js';
import { unsupportedHostRequests } from '../rpc/hostRequestHandler.js';
import { AppendBatcher } from '../state/appendBatcher.js';
import { performEffect } from '../state/effects.js';
import { stateScope } from '../state/runnerState.js';
import { stateRequestHandler } from '../state/stateRequests.js';
import type { Store } from '../state/store.js';
import { superviseRun } from './superviseRun.js';
import { createRunWorkspace, removeRunWorkspace } from './workspace.js';

/** One ad-hoc run of a runner, as `paddock run` and `paddock demo` start it. */
export interface AdHocRunRequest {
  /** Runner folder or name. */
  runner: string;
  event: ChatEventInput;
  config?: Record<string, unknown>;
  signal?: AbortSignal;
  onUpdate?(update: Update, seq: number): void;
  /** Called once the run id is known, before the runner starts. */
  onStart?(info: { runId: string; sessionId: string; runner: string; dir: string; isolation: IsolationReport; resume: Resume | undefined }): void;
}

/** Statuses whose `external` pointers count as confirmed by the harness (docs/state.md, rule 5). */
const CONFIRMING = new Set(['completed', 'cancelled']);

/**
 * Starts runs: resolves the runner, records everything in the store (session, message, run
 * lifecycle, every update and request decision, the outcome, confirmed pointers), makes the
 * workspace as a logged effect, supervises, cleans up.
 */
@injectable()
export class RunService {
  constructor(
    @inject(TOKENS.HostConfig) private readonly config: HostConfig,
    @inject(TOKENS.Logger) private readonly log: Logger,
    @inject(TOKENS.Store) private readonly store: Store,
  ) {}

  /**
   * Run one event through a runner with no binding: the session is (`adhoc-<runner>`, the
   * event's conversation), and the operator who starts it grants the host requests the runner's
   * manifest asks for, and nothing else. A paused session is refused.
   */
  async runAdHoc(request: AdHocRunRequest): Promise<RunOutcome> {
    const { store, config } = this;
    const runner = resolveRunner(request.runner, config.runnerDirs);
    const { command, args } = await runnerCommand(runner);
    const event = ChatEventSchema.parse(request.event);
    const bindingId = `adhoc-${runner.manifest.id}`;
    const { sessionId } = store.ensureSession(bindingId, `${event.platform}:${event.bot}:${event.conversation.type}:${event.conversation.id}`);
    const before = store.session(sessionId);
    if (before.paused) {
      throw new HostError('SESSION_PAUSED', `session ${sessionId} is paused: ${before.paused.reason}`, { sessionId, openEffects: before.openEffects });
    }
    const runId = newRunId();
    store.append(sessionId, [
      { type: 'message.received', data: { event } },
      {
        type: 'run.queued',
        runId,
        data: { runner: runner.manifest.id, goalRevision: 0, attempt: 1 },
        audit: { type: 'run.queued', actor: 'host', data: { runner: runner.manifest.id, version: runner.manifest.version, bindingId } },
      },
    ]);
    const ws = performEffect(store, sessionId, runId, { kind: 'workspace.create', target: runId, probe: { path: `${config.dataDir}/workspaces/${runId}` } }, () =>
      createRunWorkspace(config.dataDir, runId),
    );
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
    request.onStart?.({ runId, sessionId, runner: runner.manifest.id, dir: runner.dir, isolation: PROCESS_BACKEND_REPORT, resume });

    const hostRequests = runner.manifest.capabilities.hostRequests;
    const binding: BindingProjectionInput = {
      bindingId,
      runner: { id: runner.manifest.id, version: runner.manifest.version },
      config: request.config ?? {},
      hostRequests,
      workspace: { root: ws.root, in: ws.in, out: ws.out, tmp: ws.tmp },
      limits: { wallClockMs: config.limits.wallClockMs, idleMs: config.limits.idleMs },
    };
    const log = this.log.child({ runId, runner: runner.manifest.id });
    const batcher = new AppendBatcher(store);
    let outcome: RunOutcome | undefined;
    try {
      outcome = await superviseRun({
        launch: {
          command,
          args,
          cwd: ws.root,
          env: buildRunnerEnv({ hostEnv: process.env, home: ws.home, tmpDir: ws.tmp, runId, extra: runner.manifest.env }),
        },
        params: buildRunParams({ runId, sessionId, event, binding, resume, wallClockMs: config.limits.wallClockMs }),
        limits: config.limits,
        host: HOST_INFO,
        signal: request.signal,
        hostRequests: stateRequestHandler(store.runnerState, stateScope(bindingId, sessionId, 'session'), unsupportedHostRequests),
        log,
        onSpawn: (pid) =>
          store.append(sessionId, [
            {
              type: 'run.started',
              runId,
              data: { pid, pidStart: processStartTime(pid), recoveryDelivered: pending.map((p) => p.runId) },
              audit: { type: 'run.spawned', actor: 'host', data: { pid, command, args, cwd: ws.root, backend: PROCESS_BACKEND_REPORT.backend, limits: config.limits } },
            },
          ]),
        // Streamed to the caller only after the update is committed.
        onUpdate: (update, seq) =>
          batcher.add(sessionId, { type: 'run.update', runId, data: { runnerSeq: seq, update } }, () => request.onUpdate?.(update, seq)),
        onHostRequest: (method, verdict) => batcher.add(sessionId, requestEvent(runId, method, verdict)),
      });
      batcher.flush();
      const usage = outcome.result?.usage;
      const external = outcome.result?.external;
      const data = { status: outcome.status, reason: outcome.reason, result: outcome.result, usage, exitCode: outcome.exitCode, signal: outcome.signal };
      store.append(sessionId, [
        { type: 'run.ended', runId, data, audit: { type: 'run.ended', actor: 'host', data: { status: outcome.status, reason: outcome.reason, exitCode: outcome.exitCode, signal: outcome.signal, survivors: outcome.survivors } } },
        ...(external && CONFIRMING.has(outcome.status)
          ? [{ type: 'external.saved' as const, runId, data: { external }, audit: { type: 'external.saved', actor: `runner:${runner.manifest.id}`, data: { external } } }]
          : []),
      ]);
      return outcome;
    } finally {
      batcher.flush();
      if (!config.keepWorkspaces) {
        performEffect(store, sessionId, runId, { kind: 'workspace.remove', target: runId, probe: { path: ws.root } }, () => removeRunWorkspace(ws));
      }
    }
  }
}

function requestEvent(runId: string, method: string, verdict: 'accepted' | RpcError) {
  if (verdict === 'accepted') return { type: 'run.request' as const, runId, data: { method, decision: 'accepted' as const } };
  const decision = { code: verdict.code, reason: verdict.message };
  return { type: 'run.request' as const, runId, data: { method, decision }, audit: { type: 'policy.denied', actor: 'host', data: { method, ...decision } } };
}
