import { z } from 'zod';
import { IdSchema, MessagePartSchema, UsageSchema } from './common.js';

const MessageDeltaSchema = z.looseObject({
  kind: z.literal('message.delta'),
  messageId: z.string().optional(),
  text: z.string(),
});
const MessageSchema = z.looseObject({
  kind: z.literal('message'),
  messageId: z.string().optional(),
  role: z.enum(['assistant', 'system']).default('assistant'),
  parts: z.array(MessagePartSchema),
});
const ToolStartedSchema = z.looseObject({
  kind: z.literal('tool.started'),
  toolCallId: z.string().min(1),
  name: z.string().min(1),
  title: z.string().optional(),
  input: z.unknown().optional(),
});
const ToolFinishedSchema = z.looseObject({
  kind: z.literal('tool.finished'),
  toolCallId: z.string().min(1),
  status: z.enum(['ok', 'error', 'denied', 'cancelled']),
  output: z.unknown().optional(),
  error: z.string().optional(),
});
const ProgressSchema = z.looseObject({
  kind: z.literal('progress'),
  message: z.string(),
  percent: z.number().min(0).max(100).optional(),
});
const UsageUpdateSchema = z.looseObject({
  kind: z.literal('usage'),
  usage: UsageSchema,
  /** True when `usage` is a running total rather than an increment. */
  cumulative: z.boolean().default(false),
});
const ArtifactSchema = z.looseObject({
  kind: z.literal('artifact'),
  name: z.string().min(1),
  /** Path relative to the run's workspace `out/` folder. */
  path: z.string().min(1),
  mimeType: z.string().optional(),
  size: z.int().nonnegative().optional(),
});
const LogSchema = z.looseObject({
  kind: z.literal('log'),
  level: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  message: z.string(),
  data: z.unknown().optional(),
});

/** One streamed update of a run; `kind` says which. */
export const UpdateSchema = z
  .discriminatedUnion('kind', [
    MessageDeltaSchema,
    MessageSchema,
    ToolStartedSchema,
    ToolFinishedSchema,
    ProgressSchema,
    UsageUpdateSchema,
    ArtifactSchema,
    LogSchema,
  ])
  .meta({ id: 'Update', description: 'A streamed update of a run.' });

/** Every update kind, in protocol order. */
export const UPDATE_KINDS = [
  'message.delta',
  'message',
  'tool.started',
  'tool.finished',
  'progress',
  'usage',
  'artifact',
  'log',
] as const;

/** `run/update` notification params (runner → host). `seq` starts at 1 and increases by 1. */
export const RunUpdateParamsSchema = z
  .looseObject({ runId: IdSchema, seq: z.int().positive(), update: UpdateSchema })
  .meta({ id: 'RunUpdateParams' });
