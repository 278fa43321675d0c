/**
 * The zod schemas of `paddock serve`'s requests and answers: validated before a handler runs, serialized on the
 * way out, and the source of docs/openapi.json (scripts/genOpenApi.ts).
 */
import { z } from 'zod';
import { IdSchema, MessagePartSchema, UsageSchema } from '../../sdk/protocol/schemas/common.js';
import { ChatEventSchema } from '../../sdk/protocol/schemas/event.js';

/**
 * The schemas docs/openapi.json names as components: the API's own registry, not zod's global one, so the document
 * is the same whatever other modules a process has loaded (the CLI bundle registers many more).
 */
export const API_SCHEMAS = z.registry<{ id?: string; description?: string; [key: string]: unknown }>();

/** A problem+json error (RFC 9457) with paddock's stable `code`. */
export const ProblemSchema = z.looseObject({
  type: z.string(),
  title: z.string(),
  status: z.int(),
  detail: z.string(),
  instance: z.string(),
  requestId: z.string(),
  code: z.string(),
  errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
});
API_SCHEMAS.add(ProblemSchema, { id: 'Problem', description: 'An error (application/problem+json, RFC 9457).' });

API_SCHEMAS.add(ChatEventSchema, { id: 'ChatEvent', description: 'A chat event from a bot platform.' });

/** `:id` of a run or session route. */
export const IdParams = z.object({ id: IdSchema });

/** What dispatching an event (or a follow-up message) did. */
export const DispatchAnswerSchema = z.object({
  status: z
    .enum(['started', 'queued', 'appended', 'duplicate'])
    .describe(
      'started or queued: a run of its own; appended: delivered to the running run `runId` of the session (the ' +
        "binding's steering append); duplicate: a redelivery of an event already taken.",
    ),
  runId: z.string(),
  sessionId: z.string(),
  bindingId: z.string(),
  position: z.int().nonnegative().optional(),
  notAppended: z
    .object({ code: z.enum(['not_running', 'other_process', 'unsupported', 'refused']), message: z.string() })
    .optional()
    .describe('Steering append with a live run, yet a run of its own: why (it runs in turn, as with queue).'),
  links: z.object({ run: z.string(), runEvents: z.string(), sessionEvents: z.string() }),
});
API_SCHEMAS.add(DispatchAnswerSchema, { id: 'DispatchAnswer', description: 'What dispatch did with an event.' });

/** A run as the API shows it (no host pids). */
export const RunSchema = z.object({
  id: z.string(),
  sessionId: z.string(),
  bindingId: z.string().nullable(),
  runner: z.string(),
  status: z.string(),
  reason: z.string().nullable(),
  queuedAt: z.string(),
  startedAt: z.string().nullable(),
  endedAt: z.string().nullable(),
  usage: UsageSchema.nullable(),
});
API_SCHEMAS.add(RunSchema, { id: 'Run', description: 'A run: status, binding, session, outcome and times.' });

/** The session view: its runs and transcript. */
export const SessionSchema = z.object({
  sessionId: z.string(),
  bindingId: z.string().nullable(),
  maxSeq: z.int(),
  paused: z.object({ reason: z.string() }).nullable(),
  runs: z.array(
    z.object({
      runId: z.string(),
      runner: z.string().nullable(),
      status: z.string().nullable(),
      reason: z.string().nullable(),
      usage: UsageSchema.nullable(),
    }),
  ),
  transcript: z.array(
    z.object({
      seq: z.int(),
      role: z.enum(['user', 'assistant']),
      runId: z.string().nullable(),
      text: z.string(),
    }),
  ),
});
API_SCHEMAS.add(SessionSchema, {
  id: 'Session',
  description: 'A session: its runs and its transcript (messages and replies).',
});

/** `POST /v1/runs/:id/cancel`. */
export const CancelBodySchema = z.object({ reason: z.string().min(1).max(1000).optional() }).nullish();

/** The answer to a cancel request. */
export const CancelAnswerSchema = z.object({ runId: z.string(), requested: z.literal(true) });

/** `POST /v1/sessions/:id/messages`: a follow-up message (text or parts, not both). */
export const FollowUpSchema = z
  .object({
    id: IdSchema,
    text: z.string().min(1).optional(),
    parts: z.array(MessagePartSchema).min(1).optional(),
    sender: z.object({ id: IdSchema, name: z.string().optional() }).optional(),
  })
  .refine((b) => (b.text === undefined) !== (b.parts === undefined), {
    message: 'give text or parts (exactly one)',
    path: ['text'],
  });

/** The error answers every authenticated route may give. */
export const AUTH_ERRORS = { 401: ProblemSchema, 403: ProblemSchema, 404: ProblemSchema, 429: ProblemSchema } as const;

/** The answers of a route that dispatches a chat event (`POST /v1/events`, follow-up messages). */
export const DISPATCH_RESPONSES = {
  202: DispatchAnswerSchema,
  400: ProblemSchema,
  ...AUTH_ERRORS,
  409: ProblemSchema,
  413: ProblemSchema,
  422: ProblemSchema,
} as const;
