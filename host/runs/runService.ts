import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { BindingProjectionInput, ChatEventInput, Update } from '../../sdk/protocol/types.js';
import type { HostConfig } from '../config/hostConfig.js';
import { HOST_INFO } from '../config/hostConfig.js';
import { inject, injectable } from '../di/container.js';
import { TOKENS } from '../di/tokens.js';
import { resolveRunner, runnerCommand } from '../plugins/resolveRunner.js';
import { buildRunnerEnv } from '../process/envAllowlist.js';
import { PROCESS_BACKEND_REPORT, type IsolationReport } from '../process/isolationReport.js';
import type { RunOutcome } from '../process/outcome.js';
import type { HostRequestHandler } from '../rpc/hostRequestHandler.js';
import { buildRunParams, newRunId } from '../../sdk/protocol/runParams.js';
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
  onStart?(info: { runId: string; runner: string; dir: string; isolation: IsolationReport }): void;
  hostRequests?: HostRequestHandler;
}

/** Starts runs: resolves the runner, makes the workspace and environment, supervises, cleans up. */
@injectable()
export class RunService {
  constructor(
    @inject(TOKENS.HostConfig) private readonly config: HostConfig,
    @inject(TOKENS.Logger) private readonly log: Logger,
  ) {}

  /**
   * Run one event through a runner with no binding: the operator who starts it grants the
   * host requests the runner's manifest asks for, and nothing else.
   */
  async runAdHoc(request: AdHocRunRequest): Promise<RunOutcome> {
    const runner = resolveRunner(request.runner, this.config.runnerDirs);
    const { command, args } = await runnerCommand(runner);
    const runId = newRunId();
    const ws = createRunWorkspace(this.config.dataDir, runId);
    request.onStart?.({ runId, runner: runner.manifest.id, dir: runner.dir, isolation: PROCESS_BACKEND_REPORT });
    const binding: BindingProjectionInput = {
      bindingId: `adhoc-${runner.manifest.id}`,
      runner: { id: runner.manifest.id, version: runner.manifest.version },
      config: request.config ?? {},
      hostRequests: runner.manifest.capabilities.hostRequests,
      workspace: { root: ws.root, in: ws.in, out: ws.out, tmp: ws.tmp },
      limits: { wallClockMs: this.config.limits.wallClockMs, idleMs: this.config.limits.idleMs },
    };
    const log = this.log.child({ runId, runner: runner.manifest.id });
    try {
      return await superviseRun({
        launch: {
          command,
          args,
          cwd: ws.root,
          env: buildRunnerEnv({ hostEnv: process.env, home: ws.home, tmpDir: ws.tmp, runId, extra: runner.manifest.env }),
        },
        params: buildRunParams({
          runId,
          sessionId: `ses_${randomUUID()}`,
          event: request.event,
          binding,
          wallClockMs: this.config.limits.wallClockMs,
        }),
        limits: this.config.limits,
        host: HOST_INFO,
        signal: request.signal,
        onUpdate: request.onUpdate,
        hostRequests: request.hostRequests,
        log,
      });
    } finally {
      if (!this.config.keepWorkspaces) removeRunWorkspace(ws);
    }
  }
}
