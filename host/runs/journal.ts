import type { Logger } from 'pino';
import { processStartTime } from '../util/procIdentity.js';
import { newRunId } from '../../sdk/protocol/runParams.js';
import type { RpcError } from '../../sdk/protocol/rpcError.js';
import type { ChatEvent, Update } from '../../sdk/protocol/types.js';
import type { RunAccess } from '../authz/runAccess.js';
import { HostError } from '../errors.js';
import type { RunOutcome } from '../process/outcome.js';
import { DeltaRedactor } from '../secrets/deltaRedactor.js';
import type { Redactor } from '../secrets/redactor.js';
import { AppendBatcher } from '../state/appendBatcher.js';
import type { EventData, StoredEvent } from '../state/events.js';
import type { Store } from '../state/store.js';
import type { RunPlan } from './plan.js';
import { describeError } from './superviseRun.js';

/** A run recorded as queued. */
export interface QueuedRun {
  runId: string;
  sessionId: string;
  goalRevision: number;
  /** The seq of its `run.queued`: a session's runs start in this order (state/claims.ts). */
  queuedSeq: number;
}

/** Statuses whose `external` pointers count as confirmed by the harness (docs/state.md, rule 5). */
const CONFIRMING = new Set(['completed', 'cancelled']);

/** A short, secret-free record of a access for the audit trail. */
export function summarizeAccess(p: RunAccess): Record<string, unknown> {
  return {
    hostRequests: p.hostRequests,
    models: p.models.map((m) => m.id),
    knowledgeBases: p.knowledgeBases.map((k) => k.id),
    mcpServers: p.mcpServers.map((s) => ({
      id: s.id,
      allowedTools: s.allowedTools ?? '*',
      deniedTools: s.deniedTools,
    })),
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
 * The only writer of a run's events and audit records (docs/run-pipeline.md, "journal"): queued,
 * abandoned, and — through {@link open} — everything of a run that starts.
 */
export class RunJournal {
  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    private readonly redactor: Redactor,
  ) {}

  /**
   * Record a message and its queued run (one transaction; callers may wrap it in theirs, e.g.
   * dispatch adds its dedupe row), with the sandbox degradation the plan accepted. A paused
   * session is refused.
   */
  queued(plan: RunPlan, event: ChatEvent, sessionId: string, goalRevision = 0): QueuedRun {
    const { store } = this;
    return store.transaction(() => {
      const paused = store.pausedReason(sessionId);
      if (paused) {
        throw new HostError('SESSION_PAUSED', `session ${sessionId} is paused: ${paused}`, {
          sessionId,
          openEffects: store.sessionControl(sessionId).openEffects,
        });
      }
      const runId = newRunId();
      const { manifest } = plan.runner;
      const [, queuedEvent] = store.append(sessionId, [
        { type: 'message.received', data: { event } },
        {
          type: 'run.queued',
          runId,
          data: {
            runner: manifest.id,
            goalRevision,
            attempt: 1,
            bindingId: plan.binding.id,
            host: { pid: process.pid, start: processStartTime(process.pid) },
          },
          audit: {
            type: 'run.queued',
            actor: 'host',
            data: {
              runner: manifest.id,
              version: manifest.version,
              bindingId: plan.binding.id,
              goalRevision,
              access: summarizeAccess(plan.access),
            },
          },
        },
      ]);
      if (plan.sandbox.degraded.length > 0) {
        store.audit.append({
          type: 'sandbox.degraded',
          actor: 'host',
          sessionId,
          runId,
          data: {
            bindingId: plan.binding.id,
            asked: plan.sandbox.asked,
            backend: plan.binding.sandbox,
            degraded: plan.sandbox.degraded,
          },
        });
      }
      return { runId, sessionId, goalRevision, queuedSeq: queuedEvent!.seq };
    });
  }

  /**
   * End a queued run that never reached its runner: `cancelled` (binding disabled, superseded,
   * cancelled while waiting) or `failed` (it could not start).
   */
  abandon(run: QueuedRun, reason: string, status: 'cancelled' | 'failed' = 'cancelled'): void {
    const { store } = this;
    store.transaction(() => {
      // A run ends once: a caller abandoning a run that already ended (its own end was recorded before a
      // later step threw) adds nothing.
      const row = store.run(run.runId);
      if (row && row.status !== 'queued' && row.status !== 'running') {
        this.log.warn({ runId: run.runId, status: row.status, reason }, 'not ending a run that already ended');
        return;
      }
      store.append(run.sessionId, [
        {
          type: 'run.ended',
          runId: run.runId,
          data: { status, reason, exitCode: null, signal: null },
          audit: { type: 'run.ended', actor: 'host', data: { status, reason, started: false } },
        },
      ]);
    });
  }

  /** The writer of one starting run; `onUpdate` gets each update or notice once it is committed, redacted. */
  open(run: QueuedRun, runnerId: string, onUpdate?: (update: Update, seq: number) => void): OpenRunJournal {
    return new OpenRunJournal(this.store, this.log, this.redactor, run, runnerId, onUpdate);
  }
}

/** What `run.spawned` records about the launch (besides the pid). */
export type SpawnRecord = Record<string, unknown>;

/** One started run's writer: its updates, notices, request decisions, audits, start and end. */
export class OpenRunJournal {
  private readonly batcher: AppendBatcher;
  private readonly deltas: DeltaRedactor;
  private readonly faults = new AbortController();
  private lastSeq = 1;

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    private readonly redactor: Redactor,
    private readonly run: QueuedRun,
    private readonly runnerId: string,
    private readonly onUpdate?: (update: Update, seq: number) => void,
  ) {
    this.deltas = new DeltaRedactor(redactor);
    // An event of this run that cannot be stored (or streamed) fails this run, never the host.
    this.batcher = new AppendBatcher(store, (error, event) => {
      log.error({ runId: run.runId, err: error, event: event.type }, 'storing a run event failed');
      if (!this.faults.signal.aborted)
        this.faults.abort(new Error(`storing its ${event.type} event failed: ${describeError(error)}`));
    });
  }

  /** Aborted (with the error) when one of the run's events could not be stored: the run fails. */
  get fault(): AbortSignal {
    return this.faults.signal;
  }

  /** Something the host tells the run's chat: stored like an update, streamed to the caller. */
  notice(level: 'info' | 'warn' | 'error', message: string): void {
    const update: Update = { kind: 'log', level, message: this.redactor.text(message) };
    this.batcher.add(this.run.sessionId, { type: 'run.notice', runId: this.run.runId, data: { update } }, () =>
      this.onUpdate?.(update, 0),
    );
  }

  /**
   * One runner update: stored, then streamed redacted like the stored copy (message text as one
   * stream per message, so a secret split across deltas stays caught).
   */
  update(update: Update, seq: number): void {
    this.lastSeq = seq;
    for (const safe of this.deltas.update(update)) this.record(safe, seq);
  }

  /** The runner's updates are over: what the delta redactor still holds is recorded. */
  endUpdates(): void {
    for (const tail of this.deltas.end()) this.record(tail, this.lastSeq);
    this.batcher.flush();
  }

  /** The decision on one runner request (and, for a refusal, the audit record naming who denied what). */
  request(method: string, verdict: 'accepted' | RpcError): void {
    this.batcher.add(this.run.sessionId, requestEvent(this.run.runId, method, verdict, this.runnerId));
  }

  /**
   * An action now waits for a person: `storeRow` writes its approval row (audited there), and `approval.requested`
   * lands in the same transaction (after the run's earlier events, which are flushed first).
   */
  approvalRequested(data: EventData<'approval.requested'>, storeRow: () => void): void {
    const { store } = this;
    this.batcher.flush();
    store.transaction(() => {
      storeRow();
      store.append(this.run.sessionId, [
        // Its audit record is written with the row (host/state/approvals.ts).
        { type: 'approval.requested', runId: this.run.runId, data },
      ]);
    });
  }

  /**
   * The host's answer to an action. One the policy gave (no approval) is audited here; a person's decision, an
   * expiry or a void was audited where it was made.
   */
  approvalDecided(data: EventData<'approval.decided'>): void {
    this.now([
      {
        type: 'approval.decided',
        runId: this.run.runId,
        data,
        ...(data.approvalId === undefined ? { audit: { type: 'approval.decided', actor: 'host', data } } : {}),
      },
    ]);
  }

  /**
   * A user message the running runner took (steering `append`): `message.received` in this run's events, after the
   * run's earlier ones, audited, in one transaction with `record` (the dispatcher's dedupe row). The store redacts it
   * like every event.
   */
  appended(event: ChatEvent, goalRevision: number, record?: () => void): void {
    const { store } = this;
    this.batcher.flush();
    store.transaction(() => {
      record?.();
      store.append(this.run.sessionId, [
        {
          type: 'message.received',
          runId: this.run.runId,
          data: { event, appended: { goalRevision } },
          audit: { type: 'message.appended', actor: 'host', data: { eventId: event.id, goalRevision } },
        },
      ]);
    });
  }

  /** The run read a sensitive source: `run.tainted`, audited. */
  tainted(dataClass: string, source: string): void {
    const data = { dataClass, source };
    this.now([
      { type: 'run.tainted', runId: this.run.runId, data, audit: { type: 'run.tainted', actor: 'host', data } },
    ]);
  }

  /**
   * Files the run changed (`file.changed`, one each) and, at its end, the comparison's summary (`workspace.compared`):
   * one transaction, after the run's earlier events. Redacted by the store like every stored byte.
   */
  fileChanges(changes: EventData<'file.changed'>[], compared?: EventData<'workspace.compared'>): void {
    const { runId } = this.run;
    this.now([
      ...changes.map((data) => ({ type: 'file.changed' as const, runId, data })),
      ...(compared ? [{ type: 'workspace.compared' as const, runId, data: compared }] : []),
    ]);
  }

  /** Commit these events now, after the run's earlier ones: a decision lands before what it caused. */
  private now(events: Parameters<Store['append']>[1]): void {
    this.batcher.flush();
    this.store.append(this.run.sessionId, events);
  }

  /** The runner process started: `run.started` and its `run.spawned` audit record. */
  started(
    pid: number,
    facts: { recoveryDelivered: string[]; cgroups?: string[]; envRunId?: string },
    spawned: SpawnRecord,
  ): void {
    this.store.append(this.run.sessionId, [
      {
        type: 'run.started',
        runId: this.run.runId,
        data: {
          pid,
          pidStart: processStartTime(pid),
          recoveryDelivered: facts.recoveryDelivered,
          ...(facts.cgroups ? { cgroups: facts.cgroups } : {}),
          ...(facts.envRunId ? { envRunId: facts.envRunId } : {}),
        },
        audit: { type: 'run.spawned', actor: 'host', data: { pid, ...spawned } },
      },
    ]);
  }

  /** An audit record of this run on its own (skill changed, egress decision, setid bits cleared). */
  audit(
    type: 'skill.changed' | 'egress.allowed' | 'egress.denied' | 'run.setid_cleared',
    actor: string,
    data: unknown,
  ): void {
    const { store } = this;
    store.transaction(() =>
      store.audit.append({
        type,
        actor,
        sessionId: this.run.sessionId,
        runId: this.run.runId,
        data: data as Record<string, unknown>,
      }),
    );
  }

  /** Commit what is queued now. */
  flush(): void {
    this.batcher.flush();
  }

  /**
   * Record the run's end (and its confirmed external pointers). A result the store refuses (odd
   * data that got past the protocol checks) still ends the run, as failed, without the result:
   * the outcome is always recorded. Returns the outcome as recorded.
   */
  ended(outcome: RunOutcome): RunOutcome {
    const { sessionId, runId } = this.run;
    const write = (o: RunOutcome) => {
      const usage = o.usage ?? o.result?.usage;
      const external = o.result?.external;
      const data = {
        status: o.status,
        reason: o.reason,
        result: o.result,
        usage,
        exitCode: o.exitCode,
        signal: o.signal,
        ...(o.limits?.length ? { limits: o.limits } : {}),
      };
      this.store.append(sessionId, [
        {
          type: 'run.ended',
          runId,
          data,
          audit: {
            type: 'run.ended',
            actor: 'host',
            data: {
              status: o.status,
              reason: o.reason,
              exitCode: o.exitCode,
              signal: o.signal,
              survivors: o.survivors,
            },
          },
        },
        ...(external && CONFIRMING.has(o.status)
          ? [
              {
                type: 'external.saved' as const,
                runId,
                data: { external },
                audit: { type: 'external.saved', actor: `runner:${this.runnerId}`, data: { external } },
              },
            ]
          : []),
      ]);
    };
    try {
      write(outcome);
      return outcome;
    } catch (error) {
      this.log.error({ runId, err: error }, 'storing the run result failed');
      const failed: RunOutcome = {
        ...outcome,
        status: 'failed',
        result: undefined,
        reason: `${outcome.reason}; the host could not store the runner's result: ${describeError(error)}`,
      };
      write(failed);
      return failed;
    }
  }

  private record(update: Update, seq: number): void {
    this.batcher.add(
      this.run.sessionId,
      { type: 'run.update', runId: this.run.runId, data: { runnerSeq: seq, update } },
      (stored) => this.onUpdate?.(this.streamed(stored, update), seq),
    );
  }

  /**
   * What the caller is streamed of a committed update: the stored copy when the store redacted it (the production
   * store, hostStore.ts, redacts with this same redactor: one redaction pass, not two), else a redacted copy.
   */
  private streamed(stored: StoredEvent, update: Update): Update {
    if (!this.store.redacts) return this.redactor.value(update);
    return (stored.data as EventData<'run.update' | 'run.notice'>).update as Update;
  }
}

/** The event (and, for a refusal, the audit record naming who denied what) of one runner request. */
function requestEvent(runId: string, method: string, verdict: 'accepted' | RpcError, runnerId: string) {
  if (verdict === 'accepted')
    return { type: 'run.request' as const, runId, data: { method, decision: 'accepted' as const } };
  const deniedBy = (verdict.data as { deniedBy?: string } | undefined)?.deniedBy;
  const decision = { code: verdict.code, reason: verdict.message };
  return {
    type: 'run.request' as const,
    runId,
    data: { method, decision },
    audit: {
      type: 'policy.denied',
      actor: 'host',
      data: {
        method,
        requestedBy: `runner:${runnerId}`,
        ...decision,
        ...(deniedBy ? { deniedBy } : {}),
        details: verdict.data ?? null,
      },
    },
  };
}
