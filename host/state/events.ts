import { z } from 'zod';
import { ChatEventSchema } from '../../sdk/protocol/schemas/event.js';
import { ExternalPointersSchema, RunResultSchema } from '../../sdk/protocol/schemas/run.js';
import { UpdateSchema } from '../../sdk/protocol/schemas/updates.js';
import { UsageSchema } from '../../sdk/protocol/schemas/common.js';
import { LIMIT_HITS, OUTCOME_STATUSES } from '../process/outcome.js';

/** One side of a `file.changed` (host/changes/content.ts). */
const fileVersion = z.object({
  kind: z.enum(['file', 'link', 'other']),
  size: z.int().nonnegative(),
  sha256: z.string().nullable(),
  mode: z.int().nonnegative().optional(),
  target: z.string().optional(),
});

const effectStatus = z.enum(['succeeded', 'failed', 'still_running', 'unknown']);

/** The data of each event type (docs/state.md, "Events"). */
export const EVENT_DATA = {
  'session.created': z.object({ tenant: z.string().optional(), bindingId: z.string(), conversationKey: z.string() }),
  /**
   * A user message. `appended`: delivered to the running run the event names (steering `append`), under that run's
   * goal revision, instead of starting a run of its own.
   */
  'message.received': z.object({
    event: ChatEventSchema,
    appended: z.object({ goalRevision: z.int().nonnegative() }).optional(),
  }),
  'run.queued': z.object({
    runner: z.string(),
    goalRevision: z.int().nonnegative(),
    attempt: z.int().positive(),
    bindingId: z.string().optional(),
    /** The host process that owns the run (pid and start time); recovery leaves a live owner's runs alone. */
    host: z.object({ pid: z.int().positive(), start: z.int().nonnegative().nullable() }).optional(),
  }),
  'run.started': z.object({
    pid: z.int().positive(),
    pidStart: z.int().nonnegative().nullable(),
    recoveryDelivered: z.array(z.string()).default([]),
    /** The run's cgroup directories: recovery empties them after a host crash (setsid escapees included). */
    cgroups: z.array(z.string()).optional(),
    /**
     * The `PADDOCK_RUN_ID` the runner's processes carry when it is not the run id (a warm slot's id, started before
     * the run existed): recovery's escapee scan looks for this one.
     */
    envRunId: z.string().optional(),
  }),
  'run.update': z.object({ runnerSeq: z.int().positive(), update: UpdateSchema }),
  /** Something the host told the run's chat (a budget stop, a changed skill): a `log` update not from the runner. */
  'run.notice': z.object({ update: UpdateSchema }),
  'run.request': z.object({
    method: z.string(),
    decision: z.union([z.literal('accepted'), z.object({ code: z.int(), reason: z.string() })]),
  }),
  'run.ended': z.object({
    status: z.enum(OUTCOME_STATUSES),
    reason: z.string(),
    result: RunResultSchema.optional(),
    usage: UsageSchema.optional(),
    exitCode: z.int().nullable(),
    signal: z.string().nullable(),
    /** The host limits that acted on the run (host/process/outcome.ts LIMIT_HITS), when any did. */
    limits: z.array(z.enum(LIMIT_HITS)).optional(),
  }),
  'run.interrupted': z.object({ reason: z.string(), killedPid: z.int().nullable() }),
  'external.saved': z.object({ external: ExternalPointersSchema }),
  'effect.intent': z.object({
    effectId: z.string(),
    kind: z.string(),
    target: z.string(),
    probe: z.record(z.string(), z.unknown()),
  }),
  'effect.result': z.object({
    effectId: z.string(),
    status: z.enum(['succeeded', 'failed']),
    detail: z.string().optional(),
  }),
  'effect.reconciled': z.object({ effectId: z.string(), status: effectStatus, how: z.string() }),
  'effect.resolved': z.object({ effectId: z.string(), status: z.enum(['succeeded', 'failed']), by: z.string() }),
  /** A runner's or harness's action waits for a person (docs/approvals.md, "The approval flow"). */
  'approval.requested': z.object({
    approvalId: z.string(),
    effect: z.string(),
    target: z.object({ kind: z.string(), value: z.string() }),
    via: z.string(),
    summary: z.string().optional(),
    risk: z.object({ score: z.int(), level: z.string(), reasons: z.array(z.string()) }),
    goalRevision: z.int().nonnegative(),
    expiresAt: z.string(),
    /** An outbound action of a tainted run: the data classes it may carry and where to. */
    dataClass: z.string().optional(),
    destination: z.string().optional(),
  }),
  /** The run read a sensitive source (docs/approvals.md, "Taint"): what it sends out from now on is guarded. */
  'run.tainted': z.object({ dataClass: z.string(), source: z.string() }),
  /**
   * The host's answer to an action: by the binding's policy, a grant or the floors (no approval), or by a person,
   * a timeout or the run's end (an approval). `by` names the mechanism or the approver.
   */
  'approval.decided': z.object({
    approvalId: z.string().optional(),
    effect: z.string(),
    target: z.object({ kind: z.string(), value: z.string() }),
    decision: z.enum(['approved', 'denied']),
    by: z.string(),
    reason: z.string(),
    grantId: z.string().optional(),
  }),
  /**
   * A file of the run's writable folders changed (docs/approvals.md, "Writes and their diffs"): written through the
   * host (`fs/write`, as it happens) or found by comparing the run's folders at its start and end (`run`).
   */
  'file.changed': z.object({
    path: z.string(),
    via: z.enum(['fs/write', 'run']),
    change: z.enum(['added', 'changed', 'deleted']),
    before: fileVersion.optional(),
    after: fileVersion.optional(),
    /** Unified diff hunks (no headers) of the redacted old and new text; absent for binary, large or capped files. */
    diff: z.string().optional(),
    diffTruncated: z.boolean().optional(),
    /** Why there is no diff of a file (binary, its size, a cap), in words. */
    notDiffed: z.string().optional(),
  }),
  /** The end-of-run comparison of the run's writable folders: what it covered, and what the caps left out. */
  'workspace.compared': z.object({
    roots: z.array(z.string()),
    entries: z.object({ before: z.int().nonnegative(), after: z.int().nonnegative() }),
    changed: z.int().nonnegative(),
    recorded: z.int().nonnegative(),
    /** Changes found but not recorded (past the per-run count cap), and paths a capped walk could not compare. */
    notRecorded: z.int().nonnegative(),
    uncompared: z.int().nonnegative(),
    capped: z.array(z.string()),
    summary: z.string().optional(),
  }),
  'session.paused': z.object({ reason: z.string(), effects: z.array(z.string()) }),
  'session.resumed': z.object({ by: z.string() }),
} as const;

/** An event type. */
export type EventType = keyof typeof EVENT_DATA;
/** The data of event type `T`. */
export type EventData<T extends EventType> = z.input<(typeof EVENT_DATA)[T]>;

/** A stored event. */
export interface StoredEvent<T extends EventType = EventType> {
  id: string;
  sessionId: string;
  seq: number;
  type: T;
  runId: string | null;
  at: string;
  data: EventData<T>;
}

/** A row of the events table as SQLite returns it (`data`: the stored JSON text). */
export interface EventRow {
  session_id: string;
  seq: number;
  id: string;
  type: EventType;
  run_id: string | null;
  at: string;
  data: string;
}

/** A row's columns other than its data, as an event names them. */
export function eventColumns(r: EventRow): Omit<StoredEvent, 'data'> {
  return { id: r.id, sessionId: r.session_id, seq: r.seq, type: r.type, runId: r.run_id, at: r.at };
}

/** Event types that end a run. */
export const TERMINAL_RUN_EVENTS: readonly EventType[] = ['run.ended', 'run.interrupted'];

/**
 * Event types about a run that any host may write: its queueing (which makes the writer its owner), its interruption
 * by recovery or by the host that took a dead one over, and the reconciliation and human resolution of its effects.
 */
const ANY_HOST_RUN_EVENTS: readonly EventType[] = [
  'run.queued',
  'run.interrupted',
  'effect.reconciled',
  'effect.resolved',
];

/**
 * Event types about a run that only its owning host writes (its pipeline: start, stream, requests, approvals, effects,
 * end): a write of one by any other host is refused (runFence.ts, docs/scale-out.md §4). Every new type is one unless
 * added to the list above.
 */
export const RUN_OWNER_EVENT_TYPES: ReadonlySet<EventType> = new Set(
  (Object.keys(EVENT_DATA) as EventType[]).filter((t) => !ANY_HOST_RUN_EVENTS.includes(t)),
);
