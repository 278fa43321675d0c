import { z } from 'zod';
import { EffectSchema, IdSchema, JsonValueSchema, UsageSchema } from './common.js';

/** Every runner → host request names the run it acts for; the host refuses any other run id. */
const scoped = <T extends z.core.$ZodLooseShape>(shape: T) => z.looseObject({ runId: IdSchema, ...shape });

const StateKeySchema = z.string().min(1).max(256);

export const StateGetParamsSchema = scoped({ key: StateKeySchema }).meta({ id: 'StateGetParams' });
export const StateGetResultSchema = z
  .looseObject({ found: z.boolean(), value: JsonValueSchema.optional() })
  .meta({ id: 'StateGetResult' });
export const StateSetParamsSchema = scoped({ key: StateKeySchema, value: JsonValueSchema }).meta({
  id: 'StateSetParams',
});
export const StateSetResultSchema = z.looseObject({}).meta({ id: 'StateSetResult' });
export const StateDeleteParamsSchema = scoped({ key: StateKeySchema }).meta({ id: 'StateDeleteParams' });
export const StateDeleteResultSchema = z.looseObject({ deleted: z.boolean() }).meta({ id: 'StateDeleteResult' });

const ContentBlockSchema = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('text'), text: z.string() }),
  z.looseObject({ type: z.literal('tool_use'), id: z.string().min(1), name: z.string().min(1), input: z.unknown() }),
  z.looseObject({
    type: z.literal('tool_result'),
    toolUseId: z.string().min(1),
    content: z.string(),
    isError: z.boolean().optional(),
  }),
]);
const ChatMessageSchema = z.looseObject({
  role: z.enum(['user', 'assistant']),
  content: z.union([z.string(), z.array(ContentBlockSchema)]),
});
const ToolSpecSchema = z.looseObject({
  name: z.string().min(1),
  description: z.string().optional(),
  inputSchema: z.record(z.string(), z.unknown()),
});

export const ModelCompleteParamsSchema = scoped({
  /** A granted model ref id from `binding.models`. */
  model: IdSchema,
  system: z.string().optional(),
  messages: z.array(ChatMessageSchema).min(1),
  tools: z.array(ToolSpecSchema).optional(),
  maxTokens: z.int().positive().optional(),
  temperature: z.number().min(0).max(2).optional(),
  /** When set, the host streams text as `model/delta` notifications carrying this id. */
  streamId: z.string().min(1).optional(),
}).meta({ id: 'ModelCompleteParams' });
export const ModelCompleteResultSchema = z
  .looseObject({
    message: z.looseObject({ role: z.literal('assistant'), content: z.array(ContentBlockSchema) }),
    stopReason: z.string(),
    usage: UsageSchema,
    model: z.string(),
  })
  .meta({ id: 'ModelCompleteResult' });
/** `model/delta` notification (host → runner) while a streamed `model/complete` is pending. */
export const ModelDeltaParamsSchema = z
  .looseObject({ runId: IdSchema, streamId: z.string().min(1), text: z.string() })
  .meta({ id: 'ModelDeltaParams' });

export const KbRetrieveParamsSchema = scoped({
  knowledgeBase: IdSchema,
  query: z.string().min(1),
  topK: z.int().min(1).max(50).optional(),
}).meta({ id: 'KbRetrieveParams' });
export const KbRetrieveResultSchema = z
  .looseObject({
    chunks: z.array(
      z.looseObject({
        text: z.string(),
        source: z.looseObject({ id: z.string(), title: z.string().optional(), uri: z.string().optional() }),
        score: z.number().optional(),
      }),
    ),
  })
  .meta({ id: 'KbRetrieveResult' });

export const ToolListParamsSchema = scoped({
  server: IdSchema,
}).meta({ id: 'ToolListParams' });
export const ToolListResultSchema = z
  .looseObject({
    /** Only the tools this run may call, with their input schemas (for a model's tool list). */
    tools: z.array(
      z.looseObject({
        name: z.string().min(1),
        description: z.string().optional(),
        inputSchema: z.record(z.string(), z.unknown()),
      }),
    ),
  })
  .meta({ id: 'ToolListResult' });

export const ToolCallParamsSchema = scoped({
  server: IdSchema,
  tool: z.string().min(1),
  arguments: z.record(z.string(), z.unknown()).default({}),
}).meta({ id: 'ToolCallParams' });
export const ToolCallResultSchema = z
  .looseObject({ content: z.array(z.looseObject({ type: z.string() })), isError: z.boolean().default(false) })
  .meta({ id: 'ToolCallResult' });

const EncodingSchema = z.enum(['utf8', 'base64']).default('utf8');
export const FsReadParamsSchema = scoped({
  /** Relative to the run workspace; the host's path policy decides. */
  path: z.string().min(1),
  encoding: EncodingSchema,
  maxBytes: z.int().positive().optional(),
}).meta({ id: 'FsReadParams' });
export const FsReadResultSchema = z
  .looseObject({ content: z.string(), encoding: EncodingSchema, size: z.int().nonnegative(), truncated: z.boolean() })
  .meta({ id: 'FsReadResult' });
export const FsWriteParamsSchema = scoped({
  path: z.string().min(1),
  content: z.string(),
  encoding: EncodingSchema,
  mode: z.enum(['create', 'overwrite', 'append']).default('overwrite'),
}).meta({ id: 'FsWriteParams' });
export const FsWriteResultSchema = z.looseObject({ bytesWritten: z.int().nonnegative() }).meta({ id: 'FsWriteResult' });

export const ApprovalRequestParamsSchema = scoped({
  action: z.looseObject({ effect: EffectSchema, target: z.string().min(1), summary: z.string().min(1) }),
  scope: z.enum(['once', 'run', 'session']).default('once'),
}).meta({ id: 'ApprovalRequestParams' });
export const ApprovalRequestResultSchema = z
  .looseObject({
    decision: z.enum(['approved', 'denied']),
    grantId: z.string().optional(),
    reason: z.string().optional(),
    decidedBy: z.string().optional(),
  })
  .meta({ id: 'ApprovalRequestResult' });
