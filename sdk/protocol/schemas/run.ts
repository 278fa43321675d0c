import { z } from 'zod';
import { WireBindingSchema } from './binding.js';
import { IdSchema, JsonValueSchema, MessagePartSchema, TimestampSchema, UsageSchema } from './common.js';
import { ChatEventSchema } from './event.js';

/** Identity and deadline of one run. */
export const RunInfoSchema = z
  .looseObject({
    runId: IdSchema,
    sessionId: IdSchema,
    /** Bumped when a new message supersedes the goal of an active run. */
    goalRevision: z.int().nonnegative(),
    /** 1 for the first attempt of this run. */
    attempt: z.int().positive(),
    /** Absolute wall-clock deadline; the host kills the run after it. */
    deadline: TimestampSchema,
  })
  .meta({ id: 'RunInfo' });

/** Pointers into a harness's own state that the harness confirmed in an earlier run. */
export const ExternalPointersSchema = z
  .looseObject({
    sessionId: z.string().min(1).optional(),
    workingDirectory: z.string().min(1).optional(),
  })
  .meta({ id: 'ExternalPointers' });

/** Host-side effect recorded as intent without a result before a crash, and what recovery found. */
const RecoveredEffectSchema = z.looseObject({
  id: IdSchema,
  kind: z.string().min(1),
  status: z.enum(['succeeded', 'failed', 'still_running', 'unknown']),
  summary: z.string().optional(),
});

/** What the host hands back to continue a session: pointers and, after a crash, a recovery summary. */
export const ResumeSchema = z
  .looseObject({
    external: ExternalPointersSchema.optional(),
    recovery: z
      .looseObject({
        interruptedRunId: IdSchema,
        summary: z.string(),
        effects: z.array(RecoveredEffectSchema).default([]),
      })
      .optional(),
  })
  .meta({ id: 'Resume' });

/** `run` params (host → runner). */
export const RunParamsSchema = z
  .looseObject({
    run: RunInfoSchema,
    event: ChatEventSchema,
    binding: WireBindingSchema,
    resume: ResumeSchema.optional(),
  })
  .meta({ id: 'RunParams' });

/** How a run ended, from the runner's side. Cancellation is a result, not an error. */
export const RunStatusSchema = z.enum(['completed', 'failed', 'cancelled']).meta({ id: 'RunStatus' });

/** `run` result (runner → host). */
export const RunResultSchema = z
  .looseObject({
    status: RunStatusSchema,
    output: z.looseObject({ parts: z.array(MessagePartSchema) }).optional(),
    error: z
      .looseObject({ code: z.string().optional(), message: z.string(), data: JsonValueSchema.optional() })
      .optional(),
    usage: UsageSchema.optional(),
    /** Pointers the harness confirmed during this run; the host saves them for `resume`. */
    external: ExternalPointersSchema.optional(),
  })
  .meta({ id: 'RunResult' });

/** `run/cancel` notification params (host → runner). */
export const CancelParamsSchema = z
  .looseObject({ runId: IdSchema, reason: z.string().optional() })
  .meta({ id: 'CancelParams' });

/** `shutdown` params (host → runner); the runner answers, then exits. */
export const ShutdownParamsSchema = z.looseObject({}).meta({ id: 'ShutdownParams' });

/** `shutdown` result. */
export const ShutdownResultSchema = z.looseObject({}).meta({ id: 'ShutdownResult' });

/**
 * `run/message` params (host → runner): a user message of the run's session that arrived while the run was running,
 * under the binding's steering `append` (docs/protocol.md, "Messages during a run"). `event` is a chat event like
 * `run`'s, taken by the host under the same size limit; `goalRevision` is the run's own (an appended message amends
 * the running goal, it does not replace it).
 */
export const RunMessageParamsSchema = z
  .looseObject({ runId: IdSchema, goalRevision: z.int().nonnegative(), event: ChatEventSchema })
  .meta({ id: 'RunMessageParams' });

/**
 * `run/message` result: `accepted: true` only when the runner handed the message to the running work and the run's
 * result will account for it; `false` (with a `reason`) and the host starts an ordinary run for the message instead.
 */
export const RunMessageResultSchema = z
  .looseObject({ accepted: z.boolean(), reason: z.string().max(1_000).optional() })
  .meta({ id: 'RunMessageResult' });
