import type { z } from 'zod';
import { UsageSchema, MessagePartSchema, EffectSchema, JsonValueSchema } from './schemas/common.js';
import { WireBindingSchema, RunLimitsSchema } from './schemas/binding.js';
import { ChatEventSchema } from './schemas/event.js';
import * as H from './schemas/hostRequests.js';
import { InitializeParamsSchema, InitializeResultSchema } from './schemas/initialize.js';
import * as R from './schemas/run.js';
import { RunUpdateParamsSchema, UpdateSchema } from './schemas/updates.js';

/**
 * Every named protocol type, by the name used in docs/protocol.schema.json `$defs` and in
 * test/fixtures/protocol/<Name>/. Adding a message type means adding it here.
 */
export const PROTOCOL_TYPES = {
  InitializeParams: InitializeParamsSchema,
  InitializeResult: InitializeResultSchema,
  RunParams: R.RunParamsSchema,
  RunInfo: R.RunInfoSchema,
  ChatEvent: ChatEventSchema,
  WireBinding: WireBindingSchema,
  RunLimits: RunLimitsSchema,
  Resume: R.ResumeSchema,
  ExternalPointers: R.ExternalPointersSchema,
  RunResult: R.RunResultSchema,
  RunStatus: R.RunStatusSchema,
  CancelParams: R.CancelParamsSchema,
  RunMessageParams: R.RunMessageParamsSchema,
  RunMessageResult: R.RunMessageResultSchema,
  ShutdownParams: R.ShutdownParamsSchema,
  ShutdownResult: R.ShutdownResultSchema,
  RunUpdateParams: RunUpdateParamsSchema,
  Update: UpdateSchema,
  Usage: UsageSchema,
  MessagePart: MessagePartSchema,
  Effect: EffectSchema,
  /** Any JSON value (state values, error data): named so the generated schema has no anonymous `schema0`. */
  JsonValue: JsonValueSchema,
  StateGetParams: H.StateGetParamsSchema,
  StateGetResult: H.StateGetResultSchema,
  StateSetParams: H.StateSetParamsSchema,
  StateSetResult: H.StateSetResultSchema,
  StateDeleteParams: H.StateDeleteParamsSchema,
  StateDeleteResult: H.StateDeleteResultSchema,
  ModelCompleteParams: H.ModelCompleteParamsSchema,
  ModelCompleteResult: H.ModelCompleteResultSchema,
  ModelDeltaParams: H.ModelDeltaParamsSchema,
  KbRetrieveParams: H.KbRetrieveParamsSchema,
  KbRetrieveResult: H.KbRetrieveResultSchema,
  ToolListParams: H.ToolListParamsSchema,
  ToolListResult: H.ToolListResultSchema,
  ToolCallParams: H.ToolCallParamsSchema,
  ToolCallResult: H.ToolCallResultSchema,
  FsReadParams: H.FsReadParamsSchema,
  FsReadResult: H.FsReadResultSchema,
  FsWriteParams: H.FsWriteParamsSchema,
  FsWriteResult: H.FsWriteResultSchema,
  ApprovalRequestParams: H.ApprovalRequestParamsSchema,
  ApprovalRequestResult: H.ApprovalRequestResultSchema,
} as const satisfies Record<string, z.ZodType>;

/** Name of a protocol type in {@link PROTOCOL_TYPES}. */
export type ProtocolTypeName = keyof typeof PROTOCOL_TYPES;
