import type { Logger } from 'pino';
import type { ChatEvent } from '../../sdk/protocol/types.js';
import { ConfigRepo } from '../bindings/configRepo.js';
import type { Binding } from '../bindings/schema.js';
import { clip } from '../util/clip.js';
import { DISPATCH_DEFAULTS, type HostConfig } from '../config/hostConfig.js';
import { inject, injectable } from '../di/container.js';
import { TOKENS } from '../di/tokens.js';
import { HostError } from '../errors.js';
import { notStartedOutcome, type RunOutcome } from '../process/outcome.js';
import type { Store } from '../state/store.js';
import { conversationKey, type QueuedRun, type RunHooks, type RunPlan } from '../runs/runService.js';
import type { PlanRefusal } from '../runs/plan.js';
import { takeChatEvent } from '../runs/eventIntake.js';
import type { RunInbox } from '../runs/runInbox.js';
import { RunControlWatcher, requestCancel } from './runControls.js';
import { cancelRequestOf } from '../state/runControls.js';
import type { HostLease } from '../state/hostLeases.js';
import { askRunningHost, runEndFromStore } from './remoteAppend.js';
import { moveAsk, pendingAsks, type RunMessageAsk } from '../state/runMessages.js';
import { runStatus } from '../state/recoveryReads.js';
import { claimBlocker, ClaimWaker, tryClaim } from '../state/claims.js';
import {
  findDelivery,
  lastGoalRevision,
  liveSessionRuns,
  recordDelivery,
  waitingRunsOfTenant,
  waitingRunsTotal,
} from '../state/dispatchLog.js';
import { reclaimDeadOwners } from '../recovery/reconcile.js';
import { untilStored } from '../runs/untilStored.js';
import { adoptableRun } from '../state/hostTakeover.js';
import { moveWaitingRuns, runsToMove } from '../state/runMoves.js';
import { processStartTime } from '../util/procIdentity.js';
import type { Redactor } from '../secrets/redactor.js';
import { assertTenant, DEFAULT_TENANT, tenantOf } from '../config/tenant.js';

/** Why dispatch refused an event (stable; clients branch on it). */
export type RefusalReason = PlanRefusal | 'invalid_event' | 'queue_full' | 'session_paused';

/**
 * Why a message under steering `append` became a run of its own although its session had a live run (stable codes):
 * the run is waiting or starting, or messages wait before it (`not_running`), another host process holds it
 * (`other_process`), its runner does not take messages during a run (`unsupported`), or the runner refused it, did not
 * answer in time, or the run ended first (`refused`).
 */
export type NotAppended = { code: 'not_running' | 'other_process' | 'unsupported' | 'refused'; message: string };

/** What dispatch did with an event. */
export type DispatchTicket =
  | {
      /**
       * `started`, `queued` (a run of its own), or `appended`: delivered to the session's running run `runId`
       * (steering `append`); `done` is then that run's end.
       */
      status: 'started' | 'queued' | 'appended';
      runId: string;
      sessionId: string;
      bindingId: string;
      /** Runs ahead of this one in its session (0 when it started at once or was appended). */
      position: number;
      /** Resolves when the run has ended (never rejects). */
      done: Promise<RunOutcome>;
      /** Steering `append`, a live run, and still a run of its own: why (nothing is lost, it runs in turn). */
      notAppended?: NotAppended;
    }
  | { status: 'duplicate'; runId: string; sessionId: string; bindingId: string };

/** Hooks of one dispatched run. */
export type DispatchHooks = Omit<RunHooks, 'signal'>;

/** Options of one dispatch. */
export interface DispatchOptions {
  /**
   * The tenant the event is dispatched for (default `default`, the operator's): only its bindings route the event,
   * and the dedupe key and the session key include it. The HTTP API passes its token's tenant.
   */
  tenant?: string;
}

interface Waiting {
  /** The tenant it was dispatched for: the replan at its start routes among that tenant's bindings only. */
  tenant: string;
  queued: QueuedRun;
  plan: RunPlan;
  event: ChatEvent;
  hooks: DispatchHooks;
  controller: AbortController;
  done: Promise<RunOutcome>;
  resolve(outcome: RunOutcome): void;
  /** Set while the run is running and its runner takes messages during a run (steering `append`). */
  inbox?: RunInbox;
  /** Cancelled while waiting, its end not recorded yet (the store away a moment): never starts; the pump records it. */
  dropping?: string;
}

interface SessionSlot {
  active: Waiting | undefined;
  waiting: Waiting[];
}

/**
 * How long a run waits on the host that queued it before a host with free slots may take it on (balancing): its
 * host tried to claim it when it was queued and at every end since, so by then it waits for that host's slots.
 */
export const MOVE_AFTER_WAIT_MS = 1_000;

/**
 * The live host a run moved to, when `error` is the fence's refusal of this host's write about a run another (host,
 * epoch) owns now (runFence.ts). A host that lost its lease gets a refusal naming no owner.
 */
function movedTo(error: unknown, me: HostLease | undefined): HostLease | undefined {
  if (!me || !(error instanceof HostError) || error.code !== 'LEASE_LOST') return undefined;
  const owner = error.data.owner as HostLease | undefined;
  return owner && (owner.hostId !== me.hostId || owner.epoch !== me.epoch) ? owner : undefined;
}

const refused = (reason: RefusalReason, message: string, data: Record<string, unknown> = {}) =>
  new HostError('DISPATCH_REFUSED', message, { reason, ...data });

/** A refusal's data without its reason (the reason is passed on separately). */
function omitReason(data: Record<string, unknown>): Record<string, unknown> {
  const { reason: _reason, ...rest } = data;
  return rest;
}

/**
 * What the dispatcher needs of the run service (a fake in unit tests): the one planning path,
 * queueing and abandoning a run in the journal, and executing a run it let start.
 */
export interface DispatchRuns {
  plan(request: { kind: 'dispatch'; event: ChatEvent; tenant: string; bindingId?: string }): RunPlan;
  queue(plan: RunPlan, event: ChatEvent, sessionId: string, goalRevision: number): QueuedRun;
  abandon(run: QueuedRun, reason: string, status?: 'cancelled' | 'failed'): void;
  execute(queued: QueuedRun, plan: RunPlan, event: ChatEvent, hooks: RunHooks): Promise<RunOutcome>;
}

/**
 * The entry for bot platforms (docs/admin-guide.md, "Dispatch"): validate an event, drop
 * redeliveries, plan it (routing included: the run service's one planning path), and run it — one active run per
 * session
 * with a bounded queue behind it, within per-binding and host-wide concurrency limits.
 * Transport-free: the CLI and (later) the HTTP API call {@link dispatch}.
 */
@injectable()
export class Dispatcher {
  private readonly sessions = new Map<string, SessionSlot>();
  private readonly order: Waiting[] = [];
  private readonly byRun = new Map<string, Waiting>();
  private readonly repo: ConfigRepo;
  private readonly watcher: RunControlWatcher;
  private readonly waker: ClaimWaker;
  private reclaiming = false;
  /** Per session, the end of the last steering-`append` dispatch: the next one waits for it (order is kept). */
  private readonly appendTurns = new Map<string, Promise<void>>();
  private readonly refusalObservers = new Set<(reason: string) => void>();

  constructor(
    @inject(TOKENS.HostConfig) private readonly config: HostConfig,
    @inject(TOKENS.Logger) private readonly log: Logger,
    @inject(TOKENS.Store) private readonly store: Store,
    @inject(TOKENS.RunService) private readonly runs: DispatchRuns,
    // Kept for the composition root's signature; planning (and secret registration) is the run service's.
    @inject(TOKENS.Redactor) _redactor: Redactor,
  ) {
    this.repo = new ConfigRepo(store);
    this.watcher = new RunControlWatcher(
      store,
      (control) => this.cancel(control.runId, `${control.reason} (by ${control.by})`, { requested: true }),
      200,
      () => this.answerAsks(),
    );
    this.waker = new ClaimWaker(store, () => this.pump());
  }

  /**
   * Take one event. Resolves with a ticket (started, queued, or a duplicate of an earlier
   * delivery); throws `INVALID_INPUT` naming the field, or `DISPATCH_REFUSED` with
   * `data.reason`. Every refusal is audited, with the tenant it was dispatched for.
   */
  async dispatch(input: unknown, hooks: DispatchHooks = {}, options: DispatchOptions = {}): Promise<DispatchTicket> {
    const tenant = options.tenant ?? DEFAULT_TENANT;
    let event: ChatEvent;
    try {
      assertTenant(tenant);
      event = takeChatEvent(input, this.config.limits);
    } catch (error) {
      if (error instanceof HostError) this.auditRefusal(input, error, tenant);
      throw error;
    }
    try {
      return await this.take(event, hooks, tenant);
    } catch (error) {
      if (error instanceof HostError && error.code === 'DISPATCH_REFUSED') this.auditRefusal(event, error, tenant);
      throw error;
    }
  }

  /**
   * Hear the reason of every refusal {@link dispatch} audits (metrics). The reason is the refusal's stable code, or
   * the error code when it has none. Returns the unsubscribe function.
   */
  observeRefusals(listener: (reason: string) => void): () => void {
    this.refusalObservers.add(listener);
    return () => this.refusalObservers.delete(listener);
  }

  /**
   * Cancel a run this process holds: a waiting one never starts, an active one gets `run/cancel`. A waiting run leaves
   * this process even when its end cannot be recorded, and that refusal is thrown (`LEASE_LOST`: this host lost its
   * lease); while the store is away (`STATE_UNAVAILABLE`) it stays, never to start, until the pump records its end. A
   * waiting run that balancing moved to another host meanwhile is handed over, and the cancel asked of its new owner
   * through `run_controls` — unless `options.requested` says a request for it is written already (whoever wrote it).
   */
  cancel(runId: string, reason: string, options: { requested?: boolean } = {}): boolean {
    const w = this.byRun.get(runId);
    if (!w) return false;
    if (this.sessions.get(w.queued.sessionId)?.active === w) {
      w.controller.abort(new Error(reason));
      return true;
    }
    const movedTo = this.dropWaiting(w, reason);
    if (movedTo && !options.requested) requestCancel(this.store, [runId], reason, 'host:dispatch');
    return true;
  }

  /**
   * Cancel `runId` wherever it runs: here ({@link cancel}), or, when this process no longer holds it and it has not
   * ended (balancing moved it to another host), through a `run_controls` request its owner acts on. For a caller that
   * started the run and goes away (a completion's client, a command's Ctrl-C): a moved run once ran on regardless.
   */
  cancelWherever(runId: string, reason: string): void {
    if (this.cancel(runId, reason)) return;
    const status = runStatus(this.store, runId);
    if (status === 'queued' || status === 'running') requestCancel(this.store, [runId], reason, 'host:dispatch');
  }

  /**
   * How many more runs this process could hold now: its `maxConcurrentRuns` less the runs it holds, running or
   * waiting. What it may take on from a busier host (balancing, docs/scale-out.md §4).
   */
  get freeSlots(): number {
    return Math.max(0, this.maxTotal - this.byRun.size);
  }

  /**
   * Cancel every run this process holds (the host lost its lease: another host may already have interrupted them).
   * A cancel whose write is refused (`LEASE_LOST`: the run is another host's now) is logged, never thrown.
   */
  cancelAll(reason: string): void {
    for (const runId of [...this.byRun.keys()]) {
      try {
        this.cancel(runId, reason, { requested: true });
      } catch (error) {
        this.log.warn({ err: error, runId }, 'could not record the cancel of a run (its host lost the lease)');
      }
    }
  }

  /**
   * Wait for, then run, a run another host queued and did not start: a takeover made it this host's because that host
   * died (recovery/deadHosts.ts), or balancing moved it here from a host short of slots (state/runMoves.ts). It waits
   * in its session's queue here as if dispatched here — planned again for its binding at its start, its result in the
   * store and its streams (its first host's ticket follows it there). A run that is no longer queued and this host's is
   * left alone; one whose cancel was asked already ends `cancelled` (this host's watcher may have read that request
   * before the run was its own); one that can no longer be planned here ends `failed`, with the reason.
   */
  adopt(runId: string, from: 'takeover' | 'move' = 'takeover'): void {
    const lease = this.store.lease;
    if (!lease || this.byRun.has(runId)) return;
    const run = adoptableRun(this.store, runId, lease);
    if (!run) return;
    const queued: QueuedRun = {
      runId,
      sessionId: run.sessionId,
      goalRevision: run.goalRevision,
      queuedSeq: run.queuedSeq,
    };
    const cancel = cancelRequestOf(this.store, runId);
    if (cancel) {
      this.runs.abandon(queued, `${cancel.reason} (by ${cancel.by})`);
      return;
    }
    let event: ChatEvent;
    let plan: RunPlan;
    try {
      event = takeChatEvent(run.event, this.config.limits);
      plan = this.runs.plan({ kind: 'dispatch', event, tenant: run.tenant, bindingId: run.bindingId });
    } catch (error) {
      const why = from === 'move' ? 'it was moved here' : 'its host died before it started';
      const reason = `${why}, and it cannot be planned here: ${String(error)}`;
      this.runs.abandon(queued, reason, 'failed');
      return;
    }
    let resolve!: (outcome: RunOutcome) => void;
    const done = new Promise<RunOutcome>((r) => (resolve = r));
    const w: Waiting = {
      tenant: run.tenant,
      queued,
      plan,
      event,
      hooks: {},
      controller: new AbortController(),
      done,
      resolve,
    };
    this.enqueue(w);
    this.log.info(
      { runId, sessionId: queued.sessionId },
      from === 'move' ? 'took on a queued run of a host short of slots' : 'adopted a queued run of a host that died',
    );
    this.watcher.start();
    this.waker.start();
    this.pump();
  }

  /**
   * Balancing (docs/scale-out.md §4): take on up to {@link freeSlots} runs that other live hosts queued and cannot
   * start for want of their own slots (state/runMoves.ts), of bindings this host can run, and wait for them here.
   * `paddock serve` calls it on its lease tick; a host whose lease may have run out takes nothing. Returns the runs
   * taken on.
   */
  takeOnWaitingRuns(): string[] {
    const lease = this.store.lease;
    const limit = this.freeSlots;
    if (!lease || !this.store.leaseHolds || limit === 0) return [];
    // Which of them this host can plan (its runner, its secrets, its sandbox), checked before the move and outside its
    // writer lock: a run moved here that could not be planned would end failed, where its own host would run it.
    const plannable = runsToMove(this.store, lease, { limit, waitedMs: MOVE_AFTER_WAIT_MS }).filter((run) =>
      this.plansHere(run.runId, run.owner),
    );
    if (plannable.length === 0) return [];
    const moved = moveWaitingRuns(this.store, lease, {
      limit,
      waitedMs: MOVE_AFTER_WAIT_MS,
      bindingSlots: (bindingId) => {
        const binding = this.repo.get<Binding>('binding', bindingId)?.spec;
        return binding?.enabled ? binding.limits.maxConcurrentRuns : undefined;
      },
      process: { pid: process.pid, start: processStartTime(process.pid) },
      only: new Set(plannable.map((run) => run.runId)),
    });
    for (const { runId } of moved)
      try {
        this.adopt(runId, 'move');
      } catch (error) {
        // One run that cannot be taken on (its end not written) must not strand the others.
        this.log.error({ err: error, runId }, 'could not take on a queued run moved here');
      }
    return moved.map((m) => m.runId);
  }

  /** Whether the queued run `runId` of `owner` would be planned here now (it is still that host's to run). */
  private plansHere(runId: string, owner: HostLease): boolean {
    const run = adoptableRun(this.store, runId, owner);
    if (!run) return false;
    try {
      const event = takeChatEvent(run.event, this.config.limits);
      this.runs.plan({ kind: 'dispatch', event, tenant: run.tenant, bindingId: run.bindingId });
      return true;
    } catch (error) {
      if (error instanceof HostError) return false;
      throw error;
    }
  }

  /** Resolves once every run this process holds has ended (e.g. before a graceful stop). */
  async drain(): Promise<void> {
    while (this.byRun.size > 0) await Promise.all([...this.byRun.values()].map((w) => w.done));
  }

  /** Dedupe, plan, then append (steering `append`, a running run that takes it) or queue a run of its own. */
  private async take(event: ChatEvent, hooks: DispatchHooks, tenant: string): Promise<DispatchTicket> {
    const duplicate = this.findDelivery(tenant, event);
    if (duplicate) return duplicate;
    let plan: RunPlan;
    try {
      plan = this.runs.plan({ kind: 'dispatch', event, tenant });
    } catch (error) {
      // The one planning path refuses with the same reasons; dispatch reports them as its own.
      if (error instanceof HostError && error.code === 'RUN_REFUSED')
        throw refused(error.data.reason as PlanRefusal, error.message, omitReason(error.data));
      throw error;
    }
    const { binding } = plan;
    // Planning routes among the tenant's bindings only; a plan for another tenant's binding is a bug, never a run.
    if (tenantOf(binding) !== tenant)
      throw new Error(`planning chose binding "${binding.id}" outside the dispatch's tenant`);
    if (binding.steering !== 'append') return this.accept(event, hooks, tenant, plan);
    const { sessionId } = this.store.ensureSession(tenant, binding.id, conversationKey(event));
    return this.inAppendOrder(sessionId, async () => {
      // A redelivery that waited behind its first copy finds it recorded now.
      const again = this.findDelivery(tenant, event);
      if (again) return again;
      const target = this.appendTarget(sessionId);
      if ('remote' in target) {
        const runId = target.remote;
        const answer = await askRunningHost(this.store, { runId, sessionId, tenant, event }, this.askedBy());
        // Another host asked with this very event first: whatever became of it is recorded (or it runs in turn now).
        if (answer.existing) return this.findDelivery(tenant, event) ?? this.accept(event, hooks, tenant, plan);
        if (answer.accepted) {
          const done = runEndFromStore(this.store, runId);
          return { status: 'appended', runId, sessionId, bindingId: binding.id, position: 0, done };
        }
        const why = answer.code === 'refused' ? `run ${runId} did not take it: ${answer.reason}` : answer.reason;
        return this.accept(event, hooks, tenant, plan, { code: answer.code, message: why });
      }
      if (!('inbox' in target)) return this.accept(event, hooks, tenant, plan, target.notAppended);
      const { inbox, running } = target;
      const answer = await inbox.deliver(event, () =>
        recordDelivery(this.store, tenant, event, { bindingId: binding.id, sessionId, runId: inbox.runId }),
      );
      if (answer.accepted)
        return { status: 'appended', runId: inbox.runId, sessionId, bindingId: binding.id, position: 0, done: running };
      // Refused, unanswered, or the run ended first: the message runs in turn, like under `queue` (nothing is lost).
      const why = `run ${inbox.runId} did not take it: ${answer.reason ?? 'no reason given'}`;
      return this.accept(event, hooks, tenant, plan, { code: 'refused', message: why });
    });
  }

  /**
   * Where a steering-`append` message of `sessionId` can go: this process's running run whose runner takes messages,
   * when it is the session's only live run (a message waiting before it keeps its place); otherwise why not (no
   * `notAppended` when nothing runs: an ordinary start).
   */
  private appendTarget(
    sessionId: string,
  ): { inbox: RunInbox; running: Promise<RunOutcome> } | { remote: string } | { notAppended: NotAppended | undefined } {
    const live = liveSessionRuns(this.store, sessionId).map((r) => r.id);
    if (live.length === 0) return { notAppended: undefined };
    const active = this.sessions.get(sessionId)?.active;
    if (active && live.length === 1 && live[0] === active.queued.runId) {
      if (active.inbox) return { inbox: active.inbox, running: active.done };
      return {
        notAppended: {
          code: 'unsupported',
          message: `run ${active.queued.runId} is starting, or its runner does not take messages during a run`,
        },
      };
    }
    // Another process's or host's run that runs: asked through the store (remoteAppend.ts); its owner answers.
    if (!active && live.length === 1 && !this.byRun.has(live[0]!) && runStatus(this.store, live[0]!) === 'running')
      return { remote: live[0]! };
    if (!active && live.every((id) => !this.byRun.has(id)))
      return {
        notAppended: { code: 'other_process', message: `run ${live[0]} is held by another host process` },
      };
    return {
      notAppended: { code: 'not_running', message: `the session's run is not running yet, or messages wait before it` },
    };
  }

  /** Who asks, as the owner of a run records it (`run_messages.asked_by`). */
  private askedBy(): string {
    const lease = this.store.lease;
    return lease ? `host ${lease.hostId} (epoch ${lease.epoch})` : `host process ${process.pid}`;
  }

  /** Answer the steering asks other processes or hosts wrote for runs this process holds (remoteAppend.ts). */
  private answerAsks(): void {
    if (this.byRun.size === 0) return;
    for (const ask of pendingAsks(this.store, [...this.byRun.keys()])) void this.answerAsk(ask);
  }

  /**
   * Hand one asked message to its run's runner, as a local steering `append` would and in the same per-session order
   * (one message of a session is decided at a time here, whichever host received it): taken first (the asker can no
   * longer withdraw it), then delivered; accepted, it is recorded in the run's events with its dedupe row and the
   * ask's answer in one transaction. Refused without reaching the runner: an ask that does not match the run it names
   * (its tenant or session: written by someone else), an event this host already took (a redelivery that reached
   * both), a run that is not running here, or one whose runner takes no messages.
   */
  private async answerAsk(ask: RunMessageAsk): Promise<void> {
    const w = this.byRun.get(ask.runId);
    if (!w) return;
    const refuse = (from: 'pending' | 'delivering', why: string) => moveAsk(this.store, ask.id, from, 'refused', why);
    await this.inAppendOrder(w.queued.sessionId, async () => {
      let taken = false;
      // Its runner took the message: never refused after that (the asker would run it a second time).
      let runnerTookIt = false;
      try {
        if (ask.tenant !== w.tenant || ask.sessionId !== w.queued.sessionId) {
          refuse('pending', `the ask does not match run ${ask.runId} (another tenant or session)`);
          return;
        }
        const running = this.sessions.get(w.queued.sessionId)?.active === w;
        if (!running || !w.inbox) {
          refuse(
            'pending',
            running
              ? `run ${ask.runId} is starting, or its runner does not take messages during a run`
              : `run ${ask.runId} is not running (yet, or any more)`,
          );
          return;
        }
        let event: ChatEvent;
        try {
          // Stored by another process: checked again, as any event this host takes.
          event = takeChatEvent(JSON.parse(ask.event), this.config.limits);
        } catch (error) {
          refuse('pending', `not a valid event: ${(error as Error).message}`);
          return;
        }
        const earlier = this.findDelivery(ask.tenant, event);
        if (earlier) {
          refuse('pending', `event ${event.id} was already taken, as run ${earlier.runId}`);
          return;
        }
        if (!moveAsk(this.store, ask.id, 'pending', 'delivering')) return; // withdrawn, or another of ours took it
        taken = true;
        const delivery = { bindingId: w.plan.binding.id, sessionId: ask.sessionId, runId: ask.runId };
        // The runner took it: recorded as the truth even if the asker gave up meanwhile (its owner judged dead).
        const record = () => {
          if (!this.findDelivery(ask.tenant, event)) recordDelivery(this.store, ask.tenant, event, delivery);
          moveAsk(this.store, ask.id, 'delivering', 'accepted');
        };
        let unrecorded = false;
        const answer = await w.inbox.deliver(event, () => {
          runnerTookIt = true;
          try {
            record();
          } catch {
            unrecorded = true; // the store refused it: tried again below until it takes it
          }
        });
        if (unrecorded) {
          const what = `the message ${event.id} run ${ask.runId}'s runner took`;
          await untilStored(record, { what, log: this.log, signal: w.controller.signal });
        }
        if (!answer.accepted) refuse('delivering', answer.reason ?? 'no reason given');
      } catch (error) {
        // From the control watcher's timer: one ask's trouble must not end the host, nor keep its asker waiting.
        this.log.warn({ err: error, runId: ask.runId }, 'could not answer a steering message asked by another host');
        try {
          if (!runnerTookIt)
            refuse(taken ? 'delivering' : 'pending', `the host running it failed: ${(error as Error).message}`);
        } catch {
          // The store unreachable: the asker's own bound answers it.
        }
      }
    });
  }

  /** Run `step` after the session's earlier steering-`append` dispatches settled: appends never overtake. */
  private inAppendOrder<T>(sessionId: string, step: () => Promise<T>): Promise<T> {
    const before = this.appendTurns.get(sessionId) ?? Promise.resolve();
    const mine = before.then(step);
    const settled = mine.then(
      () => undefined,
      () => undefined,
    );
    this.appendTurns.set(sessionId, settled);
    void settled.then(() => {
      if (this.appendTurns.get(sessionId) === settled) this.appendTurns.delete(sessionId);
    });
    return mine;
  }

  private accept(
    event: ChatEvent,
    hooks: DispatchHooks,
    tenant: string,
    plan: RunPlan,
    notAppended?: NotAppended,
  ): DispatchTicket {
    const { binding } = plan;

    // One IMMEDIATE transaction: no other dispatch — of this process or another one on this data
    // folder — can interleave between the checks (dedupe, queue limits) and the queueing.
    const { store } = this;
    const waiting = store.transaction(() => {
      const again = this.findDelivery(tenant, event);
      if (again) return again;
      const { sessionId } = store.ensureSession(tenant, binding.id, conversationKey(event));
      const inSession = this.sessionLoad(sessionId);
      const restart = (binding.steering === 'interrupt' || binding.steering === 'restart') && inSession.live.length > 0;
      // The new run waits behind its session when any run of it has not ended (claimed, or waiting for a binding or
      // host slot), or when this process's slot for it is still busy: a run's end transaction releases its claim
      // before its teardown ends, and the next run of the session starts only after that teardown. Counting the
      // claim alone let messages queue without bound in that gap.
      const behindSession = inSession.live.length > 0 || this.sessions.get(sessionId)?.active !== undefined;
      if (!restart && behindSession && inSession.waiting >= binding.limits.maxQueued) {
        throw refused(
          'queue_full',
          `session ${sessionId} already has ${inSession.waiting} message(s) waiting (binding "${binding.id}" ` +
            `allows ${binding.limits.maxQueued})`,
          { bindingId: binding.id, sessionId },
        );
      }
      // The tenant's and the host's bounds count waiting runs only, and refuse only a run that would wait too.
      const wouldWait = () =>
        behindSession ||
        claimBlocker(store, {
          sessionId,
          bindingId: binding.id,
          maxPerBinding: binding.limits.maxConcurrentRuns,
          maxTotal: this.maxTotal,
          queuedSeq: null,
        }) !== undefined;
      const perTenant = this.config.maxQueuedRunsPerTenant ?? DISPATCH_DEFAULTS.maxQueuedRunsPerTenant;
      const waitingOfTenant = waitingRunsOfTenant(store, tenant);
      if (waitingOfTenant >= perTenant && wouldWait()) {
        throw refused(
          'queue_full',
          `tenant "${tenant}" already has ${waitingOfTenant} runs waiting (the most one tenant may queue on this ` +
            'host); retry when some have started',
          { bindingId: binding.id, sessionId },
        );
      }
      const maxQueued = this.config.maxQueuedRuns ?? DISPATCH_DEFAULTS.maxQueuedRuns;
      const waitingTotal = waitingRunsTotal(store);
      if (waitingTotal >= maxQueued && wouldWait()) {
        throw refused('queue_full', `this host already has ${waitingTotal} runs waiting (its limit)`, {
          bindingId: binding.id,
          sessionId,
        });
      }
      const revision = this.lastRevision(sessionId) + (restart ? 1 : 0);
      let queued: QueuedRun;
      try {
        queued = this.runs.queue(plan, event, sessionId, revision);
      } catch (error) {
        if (error instanceof HostError && error.code === 'SESSION_PAUSED')
          throw refused('session_paused', error.message, { bindingId: binding.id, sessionId });
        throw error;
      }
      recordDelivery(store, tenant, event, { bindingId: binding.id, sessionId, runId: queued.runId });
      // Steering "restart" reaches runs other processes hold through run_controls (their watcher cancels them).
      const foreign = restart ? inSession.live.filter((id) => !this.byRun.has(id)) : [];
      if (foreign.length > 0) requestCancel(store, foreign, `superseded by message ${event.id}`, 'host:dispatch');
      return { queued, restart, ahead: inSession.live.length };
    });
    if ('status' in waiting) return waiting;

    const { queued, restart, ahead } = waiting;
    const slot = this.slot(queued.sessionId);
    if (restart) {
      // Steering "restart": the newer message supersedes everything before it in this session.
      for (const old of [...slot.waiting]) this.cancel(old.queued.runId, `superseded by message ${event.id}`);
      slot.active?.controller.abort(new Error(`superseded by message ${event.id}`));
    }
    let resolve!: (outcome: RunOutcome) => void;
    const done = new Promise<RunOutcome>((r) => (resolve = r));
    const w: Waiting = { tenant, queued, plan, event, hooks, controller: new AbortController(), done, resolve };
    this.enqueue(w);
    this.watcher.start();
    this.waker.start();
    this.pump();
    return {
      status: slot.active === w ? 'started' : 'queued',
      runId: queued.runId,
      sessionId: queued.sessionId,
      bindingId: binding.id,
      position: slot.active === w ? 0 : ahead,
      done,
      ...(notAppended ? { notAppended } : {}),
    };
  }

  /** Runs at once over every host process on this data folder. */
  private get maxTotal(): number {
    return this.config.maxConcurrentRuns ?? DISPATCH_DEFAULTS.maxConcurrentRuns;
  }

  /** A session's runs that have not ended (any process), and how many of them wait (hold no claim). */
  private sessionLoad(sessionId: string): { live: string[]; waiting: number } {
    const rows = liveSessionRuns(this.store, sessionId);
    return { live: rows.map((r) => r.id), waiting: rows.filter((r) => !r.claimed).length };
  }

  /**
   * Start every waiting run of this process that the store lets claim, oldest first. Called when
   * a run is queued, when one of ours ends, and when another process committed (a claim of
   * theirs may have been released).
   */
  private pump(): void {
    try {
      this.pumpOnce();
    } catch (error) {
      // pump runs from timers and commit wakes, where a throw would end the host: the store unreachable a moment
      // (a lost connection, a restart) leaves every waiting run in its place for the claim waker's next tick.
      this.log.warn({ err: error }, 'could not start waiting runs now; tried again on the next wake');
    }
  }

  private pumpOnce(): void {
    let reclaim = false;
    for (const w of [...this.order]) {
      if (w.dropping !== undefined) {
        try {
          this.dropWaiting(w, w.dropping);
        } catch (error) {
          this.log.error({ err: error, runId: w.queued.runId }, 'could not record the cancel of a waiting run');
        }
        continue;
      }
      const slot = this.slot(w.queued.sessionId);
      const bindingId = w.plan.binding.id;
      if (slot.active || slot.waiting[0] !== w) continue;
      const current = this.repo.get<Binding>('binding', bindingId);
      if (!current || !current.spec.enabled) {
        const reason = `binding "${bindingId}" was ${current ? 'disabled' : 'deleted'} before the run started`;
        try {
          this.dropWaiting(w, reason);
        } catch (error) {
          // pump runs from timers: the run left this process anyway; its end is another host's to record.
          this.log.error({ err: error, runId: w.queued.runId }, 'could not record the end of a run never started');
        }
        continue;
      }
      let verdict: ReturnType<typeof tryClaim>;
      try {
        verdict = tryClaim(this.store, {
          runId: w.queued.runId,
          sessionId: w.queued.sessionId,
          bindingId,
          maxPerBinding: w.plan.binding.limits.maxConcurrentRuns,
          maxTotal: this.maxTotal,
        });
      } catch (error) {
        // The store unreachable a moment (a lost connection, a restart): the run keeps its place for the next pump.
        if (error instanceof HostError && error.code === 'STATE_UNAVAILABLE') {
          this.log.warn({ err: error, runId: w.queued.runId }, 'could not claim a waiting run yet; tried again');
          break;
        }
        // pump runs from timers: one run's trouble (e.g. it was ended elsewhere) must not stop the host.
        this.log.error({ err: error, runId: w.queued.runId }, 'could not claim a waiting run; it is dropped');
        this.unqueue(w);
        this.finish(w, {
          ...notStartedOutcome(w.queued.runId, `could not claim its session: ${(error as Error).message}`),
          status: 'failed',
        });
        continue;
      }
      if (!verdict.ok && verdict.by === 'moved') {
        this.handOver(w);
        continue;
      }
      if (!verdict.ok) {
        reclaim ||= verdict.deadOwners;
        if (verdict.by === 'host' && !verdict.deadOwners) break;
        continue;
      }
      this.unqueue(w);
      slot.active = w;
      void this.execute(w);
    }
    if (reclaim) void this.reclaim();
  }

  /**
   * Something blocking a waiting run belongs to a host process that died: recovery interrupts
   * its runs (killing runners and emptying their cgroups), which releases their claims; then try again.
   */
  private async reclaim(): Promise<void> {
    if (this.reclaiming) return;
    this.reclaiming = true;
    try {
      const report = await reclaimDeadOwners(this.store);
      for (const r of report.interruptedRuns)
        this.log.warn(
          { runId: r.runId, killedPid: r.killedPid },
          'reclaimed the claim of a run whose host process died',
        );
    } catch (error) {
      this.log.error({ err: error }, 'could not reclaim the runs of a dead host process');
    } finally {
      this.reclaiming = false;
    }
    this.pump();
  }

  private async execute(w: Waiting): Promise<void> {
    let outcome: RunOutcome;
    try {
      const plan = this.replan(w);
      if (plan instanceof HostError) {
        const reason = `refused before it started (${String(plan.data.reason)}): ${plan.message}`;
        this.runs.abandon(w.queued, reason);
        outcome = notStartedOutcome(w.queued.runId, reason);
      } else
        outcome = await this.runs.execute(w.queued, plan, w.event, {
          ...w.hooks,
          signal: w.controller.signal,
          onInbox: (inbox) => (w.inbox = inbox),
        });
    } catch (error) {
      // The run never reached its runner (e.g. its entry failed to build): end it, with the reason.
      const reason = `the run could not start: ${(error as Error).message}`;
      this.log.error({ err: error, runId: w.queued.runId }, 'run failed to start');
      // Tried again until the store takes it, as a run's end is: a failed start the store refused once (a database
      // restart while runs start) left the run queued with its claim held — its conversation, its binding's and its
      // host's slots taken for as long as the host kept its lease (outside attack 7, F1).
      try {
        await untilStored(() => this.runs.abandon(w.queued, reason, 'failed'), {
          what: `the failed start of run ${w.queued.runId}`,
          log: this.log,
          signal: w.controller.signal,
        });
      } catch (recordError) {
        // The run is another host's now (its takeover records it), or this host is stopping (its next start's
        // recovery or a takeover ends it).
        this.log.error({ err: recordError, runId: w.queued.runId }, 'could not record the failed start');
      }
      outcome = { ...notStartedOutcome(w.queued.runId, reason), status: 'failed' };
    }
    w.inbox = undefined;
    const slot = this.slot(w.queued.sessionId);
    slot.active = undefined;
    this.finish(w, outcome);
    this.pump();
  }

  /**
   * The run's plan at its start, for the binding it was queued under: what the admin changed while it waited
   * (`paddock apply`: grants, config, runner, sandbox) holds, or the planning refusal with its code.
   */
  private replan(w: Waiting): RunPlan | HostError {
    try {
      return this.runs.plan({ kind: 'dispatch', event: w.event, tenant: w.tenant, bindingId: w.plan.binding.id });
    } catch (error) {
      if (error instanceof HostError && error.code === 'RUN_REFUSED') return error;
      throw error;
    }
  }

  private finish(w: Waiting, outcome: RunOutcome): void {
    this.release(w);
    w.resolve(outcome);
  }

  /** Forget a run this process no longer holds (its ticket is the caller's to resolve). */
  private release(w: Waiting): void {
    this.byRun.delete(w.queued.runId);
    const slot = this.sessions.get(w.queued.sessionId);
    if (slot && !slot.active && slot.waiting.length === 0) this.sessions.delete(w.queued.sessionId);
    if (this.byRun.size === 0) {
      this.watcher.stop();
      this.waker.stop();
    }
  }

  /**
   * A waiting run balancing moved to another host (its claim or end here was refused naming that owner) leaves this
   * process; its ticket follows it to its end in the store, as an appended message's does.
   */
  private handOver(w: Waiting): void {
    this.unqueue(w);
    this.release(w);
    this.log.info({ runId: w.queued.runId }, 'a waiting run was moved to a host with free slots; it runs there');
    void runEndFromStore(this.store, w.queued.runId).then(w.resolve);
  }

  /**
   * Take a waiting run out of this process, recorded ended before it started. It leaves this process (its ticket
   * resolves) even when that record is refused, then the refusal is thrown: a lost lease refuses it (the run was
   * re-owned by the host that took this one over), and a run kept here with no queue left to start it from would hold
   * every drain, so a stopping host, forever — and, once its session's slot is gone, break the next cancel. A run
   * balancing moved to another host meanwhile is handed over instead, and that host returned.
   */
  private dropWaiting(w: Waiting, reason: string): HostLease | undefined {
    try {
      this.runs.abandon(w.queued, reason);
    } catch (error) {
      const owner = movedTo(error, this.store.lease);
      if (owner) {
        this.handOver(w);
        return owner;
      }
      // The store away a moment: out of this process, the run would stay queued in the store, its conversation
      // blocked, until its host restarted. It stays here instead, never to start, and the pump records its end.
      if (error instanceof HostError && error.code === 'STATE_UNAVAILABLE') {
        w.dropping = reason;
        this.log.warn({ err: error, runId: w.queued.runId }, 'could not record the cancel of a waiting run yet');
        return undefined;
      }
      this.unqueue(w);
      this.finish(w, notStartedOutcome(w.queued.runId, `${reason} (its end not recorded here: ${String(error)})`));
      throw error;
    }
    this.unqueue(w);
    this.finish(w, notStartedOutcome(w.queued.runId, reason));
    return undefined;
  }

  /**
   * Put a run in its session's queue here at its place in the session's `run.queued` order, which the store's claim
   * follows (only a session's earliest waiting run may start). A run this host queues now comes last, but one it adopts
   * from a host that died was queued earlier than the runs this host queued meanwhile: appended behind them, it would
   * be the run the store lets start, and the pump would never try it.
   */
  private enqueue(w: Waiting): void {
    const { waiting } = this.slot(w.queued.sessionId);
    const after = waiting.findIndex((other) => other.queued.queuedSeq > w.queued.queuedSeq);
    waiting.splice(after === -1 ? waiting.length : after, 0, w);
    this.order.push(w);
    this.byRun.set(w.queued.runId, w);
  }

  private unqueue(w: Waiting): void {
    const slot = this.slot(w.queued.sessionId);
    // splice(-1, 1) would drop another run: only a run still in the queue is taken out of it.
    const at = slot.waiting.indexOf(w);
    if (at !== -1) slot.waiting.splice(at, 1);
    const i = this.order.indexOf(w);
    if (i !== -1) this.order.splice(i, 1);
  }

  private slot(sessionId: string): SessionSlot {
    let slot = this.sessions.get(sessionId);
    if (!slot) this.sessions.set(sessionId, (slot = { active: undefined, waiting: [] }));
    return slot;
  }

  private lastRevision(sessionId: string): number {
    return lastGoalRevision(this.store, sessionId);
  }

  private findDelivery(tenant: string, event: ChatEvent): DispatchTicket | undefined {
    const row = findDelivery(this.store, tenant, event.platform, event.bot, event.id);
    return row ? { status: 'duplicate', ...row } : undefined;
  }

  private auditRefusal(input: unknown, error: HostError, tenant: string): void {
    const e = (input ?? {}) as Partial<ChatEvent>;
    // The event was refused: what is kept of it is clipped (it may be many megabytes of one string).
    const text = (v: unknown) => (typeof v === 'string' ? clip(v) : null);
    const actor = typeof e.platform === 'string' ? `platform:${clip(e.platform)}` : 'platform:unknown';
    try {
      this.store.transaction(() =>
        this.store.audit.append({
          type: 'dispatch.refused',
          actor,
          data: {
            reason: error.data.reason ?? error.code,
            message: error.message,
            // As given (clipped): an invalid tenant name is recorded for what it was.
            tenant: text(tenant),
            eventId: text(e.id),
            bot: text(e.bot),
            conversation:
              e.conversation && typeof e.conversation === 'object'
                ? { type: text(e.conversation.type), id: text(e.conversation.id) }
                : null,
            bindingId: error.data.bindingId ?? null,
          },
        }),
      );
    } catch (auditError) {
      this.log.error({ err: auditError }, 'could not audit a dispatch refusal');
    }
    const reason = typeof error.data.reason === 'string' ? error.data.reason : error.code;
    for (const listener of this.refusalObservers) {
      try {
        listener(reason);
      } catch (observerError) {
        this.log.warn({ err: observerError }, 'a dispatch-refusal observer failed');
      }
    }
  }
}
