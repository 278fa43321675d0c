import type { Logger } from 'pino';
import type { Backend } from '../sandbox/backend.js';
import { buildRunParams } from '../../sdk/protocol/runParams.js';
import type { ChatEvent, ChatEventInput, Resume, Update } from '../../sdk/protocol/types.js';
import type { HostConfig } from '../config/hostConfig.js';
import { DISPATCH_DEFAULTS, HOST_INFO } from '../config/hostConfig.js';
import { inject, injectable } from '../di/container.js';
import { TOKENS } from '../di/tokens.js';
import type { IsolationReport } from '../process/isolationReport.js';
import { notStartedOutcome, type RunOutcome } from '../process/outcome.js';
import { ClaimWaker, tryClaim } from '../state/claims.js';
import { reclaimDeadOwners } from '../recovery/reconcile.js';
import { meteredUsage } from '../state/meteredUsage.js';
import { stateScope } from '../state/runnerState.js';
import type { Store } from '../state/store.js';
import { tenantOfSession } from '../state/tenancy.js';
import { tenantOf } from '../config/tenant.js';
import type { Redactor } from '../secrets/redactor.js';
import type { Gateway } from '../gateway/gateway.js';
import { openRunPolicy } from './approvalPort.js';
import { hostRequestTable, tableHandler } from './hostRequestTable.js';
import { RunJournal, type OpenRunJournal, type QueuedRun } from './journal.js';
import { takeChatEvent } from './eventIntake.js';
import { planRun, type PlanRequest, type RunPlan } from './plan.js';
import { HostError } from '../errors.js';
import { provision, type ProvisionDeps, type Provisioned } from './provision.js';
import { describeError, superviseRun } from './superviseRun.js';
import type { RunInbox } from './runInbox.js';
import { untilStored } from './untilStored.js';
import { WarmPools } from './warmPool.js';

export type { QueuedRun } from './journal.js';
export type { RunPlan } from './plan.js';

/** Hooks and inputs of one run's execution. */
export interface RunHooks {
  signal?: AbortSignal;
  onUpdate?(update: Update, seq: number): void;
  /** Called once the run id is known, before the runner starts. */
  onStart?(info: {
    runId: string;
    sessionId: string;
    runner: string;
    dir: string;
    isolation: IsolationReport;
    resume: Resume | undefined;
  }): void;
  /** The run's runner takes messages during the run (steering `append`): the way in, until the run is decided. */
  onInbox?(inbox: RunInbox): void;
}

/** One ad-hoc run of a runner, as `paddock run` and `paddock demo` start it. */
export interface AdHocRunRequest extends RunHooks {
  /** Runner folder or name. */
  runner: string;
  event: ChatEventInput;
  config?: Record<string, unknown>;
  /** Sandbox backend (default `process`). */
  sandbox?: Backend;
  /**
   * Run with less isolation where the backend or a limit is missing (audited), like a binding's `allowDegrade` (default
   * false).
   */
  allowDegrade?: boolean;
}

/** The key of a conversation within a binding: the session is (binding, this key). */
export function conversationKey(event: ChatEvent): string {
  return `${event.platform}:${event.bot}:${event.conversation.type}:${event.conversation.id}`;
}

/**
 * Starts runs, stage by stage (docs/run-pipeline.md): plan → journal.queued → provision →
 * supervise → journal.ended → release. Everything is recorded in the store through the run's
 * journal; everything provisioned is released on every path.
 */
@injectable()
export class RunService {
  private readonly journal: RunJournal;
  /** Started runner processes waiting for a binding's next runs (docs/warm-pool.md). */
  readonly warmPools: WarmPools;

  constructor(
    @inject(TOKENS.HostConfig) private readonly config: HostConfig,
    @inject(TOKENS.Logger) private readonly log: Logger,
    @inject(TOKENS.Store) private readonly store: Store,
    @inject(TOKENS.Redactor) private readonly redactor: Redactor,
    @inject(TOKENS.Gateway) private readonly gateway: Gateway,
  ) {
    this.journal = new RunJournal(store, log, redactor);
    this.warmPools = new WarmPools(config, log);
  }

  /** Plan a run (the one planning path, dispatched or ad hoc); throws `RUN_REFUSED` with its reason. */
  plan(request: PlanRequest): RunPlan {
    return planRun({ config: this.config, store: this.store, redactor: this.redactor }, request);
  }

  /**
   * Record a message and its queued run (one transaction; callers may wrap it in theirs, e.g.
   * dispatch adds its dedupe row). A paused session is refused.
   */
  queue(plan: RunPlan, event: ChatEvent, sessionId: string, goalRevision = 0): QueuedRun {
    return this.journal.queued(plan, event, sessionId, goalRevision);
  }

  /** End a queued run that never reached its runner: `cancelled` or `failed` (it could not start). */
  abandon(run: QueuedRun, reason: string, status: 'cancelled' | 'failed' = 'cancelled'): void {
    this.journal.abandon(run, reason, status);
  }

  /** Run one event through a runner with no binding (session = `adhoc-<runner>` × conversation). */
  async runAdHoc(request: AdHocRunRequest): Promise<RunOutcome> {
    // The event is taken (size, then shape) before anything else is done for it.
    const event = takeChatEvent(request.event, this.config.limits);
    const plan = this.plan({
      kind: 'adhoc',
      runner: request.runner,
      config: request.config,
      sandbox: request.sandbox,
      allowDegrade: request.allowDegrade,
    });
    const { sessionId } = this.store.ensureSession(plan.binding.tenant, plan.binding.id, conversationKey(event));
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
    const req = {
      runId: queued.runId,
      sessionId: queued.sessionId,
      bindingId: plan.binding.id,
      maxPerBinding: plan.binding.limits.maxConcurrentRuns,
      maxTotal: this.config.maxConcurrentRuns ?? DISPATCH_DEFAULTS.maxConcurrentRuns,
    };
    for (;;) {
      if (signal?.aborted) return false;
      const verdict = tryClaim(store, req);
      if (verdict.ok) return true;
      // Only a takeover of this host re-owns an ad-hoc run (balancing moves dispatched runs): the lease is lost.
      if (verdict.by === 'moved')
        throw new HostError('LEASE_LOST', `run ${queued.runId} is host ${verdict.owner.hostId}'s now`, {
          runIds: [queued.runId],
          owner: verdict.owner,
        });
      if (verdict.deadOwners) {
        await reclaimDeadOwners(store);
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

  /**
   * Start a queued run (planned and journaled as queued) and supervise it to its end: provision → supervise →
   * journal.ended → release.
   */
  async execute(queued: QueuedRun, plan: RunPlan, event: ChatEvent, hooks: RunHooks = {}): Promise<RunOutcome> {
    const journal = this.journal.open(queued, plan.runner.manifest.id, hooks.onUpdate);
    const deps: ProvisionDeps = {
      config: this.config,
      store: this.store,
      log: this.log,
      redactor: this.redactor,
      gateway: this.gateway,
    };
    const input = { queued, plan, journal };
    const warm = await this.warmPools.provision(deps, input);
    const run = await (warm ? Promise.resolve(warm) : provision(deps, input)).catch((error: unknown) => {
      journal.flush(); // a notice of the failed start lands before the run is ended
      throw error;
    });
    try {
      hooks.onStart?.({
        runId: queued.runId,
        sessionId: queued.sessionId,
        runner: plan.runner.manifest.id,
        dir: plan.runner.dir,
        isolation: run.sandbox.report,
        resume: run.resume,
      });
      const outcome = await this.supervise(queued, plan, event, run, journal, hooks);
      const what = `the end of run ${queued.runId}`;
      return this.handOut(
        await untilStored(() => journal.ended(outcome), { what, log: this.log, signal: hooks.signal }),
      );
    } finally {
      journal.flush();
      await run.release();
    }
  }

  /**
   * Run the runner under its sandbox against the run's host request table; the outcome as the host metered and saw it.
   */
  private async supervise(
    queued: QueuedRun,
    plan: RunPlan,
    event: ChatEvent,
    run: Provisioned,
    journal: OpenRunJournal,
    hooks: RunHooks,
  ): Promise<RunOutcome> {
    const { signal } = hooks;
    const { runId, sessionId } = queued;
    const { binding, runner, access } = plan;
    const limits = access.limits;
    // The tenant the session recorded (the store's, not the binding's current one).
    const tenant = tenantOfSession(this.store, sessionId) ?? tenantOf(binding);
    const { policy, release: releasePolicy } = openRunPolicy({
      store: this.store,
      redactor: this.redactor,
      journal,
      plan,
      queued,
      tenant,
      workspaceRoot: run.workspace.root,
    });
    // MCP tool calls through the gateway (SDK tool/call and a harness's MCP endpoint) are the policy's too.
    if (run.gateway) {
      run.gateway.run.toolGate = (server, tool, args, signal) => policy.checkTool(server, tool, args, signal);
      run.gateway.run.taint = (dataClass, source) => policy.markTainted(dataClass, source);
    }
    // So is every destination of the run's egress proxy, and every plain-HTTP request through it.
    run.egress?.setGate({
      destination: (destination, method, signal) => policy.checkEgress(destination, method, signal),
      outbound: (text, destination, names) => policy.scanOutbound(text, destination, 'egress', names),
      tunnel: (destination) => policy.tunnelScanner(destination),
    });
    const table = hostRequestTable({
      access,
      state: {
        repo: this.store.runnerState,
        scope: stateScope(binding.id, sessionId, access.state === 'binding' ? 'binding' : 'session', tenant),
      },
      workspaceRoot: run.workspace.root,
      gateway: { gateway: this.gateway, handle: run.gateway },
      policy,
      runnerId: runner.manifest.id,
      writes: run.changes,
      leaseHolds: () => this.store.leaseHolds,
    });
    // Checked before the sandbox is handed over: a throw here leaves its release to provision's undo.
    const params = buildRunParams({
      runId,
      sessionId,
      event,
      binding: run.wire,
      resume: run.resume,
      wallClockMs: limits.wallClockMs,
      goalRevision: queued.goalRevision,
    });
    const { launch, containment } = run.launch();
    const stopWatching = run.disk?.watch();
    let supervised: RunOutcome;
    try {
      supervised = await superviseRun({
        launch,
        containment,
        warm: run.warm,
        params,
        limits,
        requestLimits: access.requestLimits,
        host: HOST_INFO,
        signal,
        // The run token dies with the result line (or any other end), not at teardown.
        onDecided: () => run.gateway?.revoke(),
        fault: journal.fault,
        hostRequests: tableHandler(table, () => this.store.leaseHolds),
        log: this.log.child({ runId, runner: runner.manifest.id, bindingId: binding.id }),
        onSpawn: (pid) =>
          journal.started(
            pid,
            {
              recoveryDelivered: run.recoveryDelivered,
              cgroups: containment?.paths,
              ...(run.warm ? { envRunId: run.warm.slotId } : {}),
            },
            {
              // Which runner folder ran: a built-in runner, an installed package version, or a runner folder.
              runner: { id: runner.manifest.id, version: runner.manifest.version, dir: runner.dir },
              command: launch.command,
              args: launch.args,
              cwd: run.workspace.root,
              backend: binding.sandbox,
              ...(run.sandbox.binds ? { binds: run.sandbox.binds } : {}),
              isolation: run.sandbox.report,
              limits,
              requestLimits: access.requestLimits,
              skills: run.skills.handles.map(({ id, name, version, digest, changed }) => ({
                id,
                name,
                version: version ?? null,
                digest,
                changed,
              })),
              gateway: run.gateway
                ? {
                    baseUrl: run.gateway.baseUrl,
                    models: access.models.map((m) => m.id),
                    mcpServers: access.mcpServers.map((m) => m.id),
                    knowledgeBases: access.knowledgeBases.map((k) => k.id),
                  }
                : null,
            },
          ),
        redact: (text) => this.redactor.text(text),
        // An accepted message is recorded in this run's events (with the caller's dedupe row) before it is answered.
        onMessages: (deliver) =>
          hooks.onInbox?.({
            runId,
            deliver: async (message, record) => {
              const answer = await deliver(message);
              if (answer.accepted) journal.appended(message, queued.goalRevision, record);
              return answer;
            },
          }),
        onUpdate: (update, seq) => journal.update(update, seq),
        onHostRequest: (method, verdict) => journal.request(method, verdict),
      });
    } catch (error) {
      releasePolicy();
      throw error;
    } finally {
      stopWatching?.();
    }
    try {
      journal.endUpdates();
      // Before the policy forgets what the run's reads taught the redactor: a diff may hold those values.
      await this.recordChanges(runId, run, journal);
      releasePolicy();
      return this.settle(runId, run, journal, supervised);
    } catch (error) {
      releasePolicy();
      // The runner started and is over: a throw here fails the run with its reason and ends it once, here
      // (never as "could not start" by a caller; docs/run-pipeline.md, "exactly one run.ended").
      this.log.error({ runId, err: error }, 'the host failed while recording a run that had started');
      return {
        ...supervised,
        status: 'failed',
        result: undefined,
        reason: `${supervised.reason}; then the host failed while recording the run: ${describeError(error)}`,
      };
    }
  }

  /**
   * What the runner changed in its writable folders without the host, by comparing them with the snapshot taken
   * before it started (it is over, so nothing writes there now). A failure is logged and told, never the run's end.
   */
  private async recordChanges(runId: string, run: Provisioned, journal: OpenRunJournal): Promise<void> {
    try {
      await run.changes.finish();
    } catch (error) {
      this.log.error({ runId, err: error }, "comparing the run's folders with their start failed");
      journal.notice('warn', `the run's file changes could not be recorded: ${describeError(error)}`);
    }
  }

  /** The supervised outcome as recorded: disk notes, a fault of the run's writes, the host-metered usage. */
  private settle(runId: string, run: Provisioned, journal: OpenRunJournal, supervised: RunOutcome): RunOutcome {
    let outcome = supervised;
    // A limit the kernel held (ENOSPC) is named in the outcome, whatever the runner made of it.
    const diskNotes = run.disk?.notes() ?? [];
    if (diskNotes.length) outcome = { ...outcome, reason: `${outcome.reason}; ${diskNotes.join('; ')}` };
    const diskHits = run.disk?.limitHits() ?? [];
    if (diskHits.length) outcome = { ...outcome, limits: [...new Set([...(outcome.limits ?? []), ...diskHits])] };
    // An update of the run's last turn that could not be stored: the run did not deliver what it said.
    if (journal.fault.aborted && !outcome.reason.startsWith('host failed')) {
      outcome = {
        ...outcome,
        status: outcome.status === 'completed' ? 'failed' : outcome.status,
        reason:
          `${outcome.reason}; then the host failed while handling the runner output: ` +
          `${describeError(journal.fault.reason)}`,
      };
    }
    // The run's usage is what the host metered; the runner's own claim is kept beside it, labelled.
    return { ...outcome, usage: meteredUsage(this.store, runId, outcome.result?.usage) };
  }

  /** The recorded outcome as the caller may see it: redacted (the stored copy was redacted by the store). */
  private handOut(outcome: RunOutcome): RunOutcome {
    try {
      return this.redactor.value(outcome);
    } catch (error) {
      // A value the redactor cannot walk is not handed out.
      return {
        ...outcome,
        result: undefined,
        reason: `${outcome.reason}; the result could not be redacted for display: ${describeError(error)}`,
      };
    }
  }
}
