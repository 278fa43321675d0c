import type { z } from 'zod';
import type * as C from './schemas/common.js';
import type * as B from './schemas/binding.js';
import type * as E from './schemas/event.js';
import type * as H from './schemas/hostRequests.js';
import type * as I from './schemas/initialize.js';
import type * as R from './schemas/run.js';
import type * as U from './schemas/updates.js';

// Types are inferred from the schemas only; nobody writes a parallel interface.
// `X` is the parsed form (defaults applied); `XInput` is what a sender may write.

export type JsonValue = z.infer<typeof C.JsonValueSchema>;
export type Usage = z.infer<typeof C.UsageSchema>;
export type MessagePart = z.infer<typeof C.MessagePartSchema>;
export type Effect = z.infer<typeof C.EffectSchema>;
export type ChatEvent = z.infer<typeof E.ChatEventSchema>;
export type ChatEventInput = z.input<typeof E.ChatEventSchema>;
export type WireBinding = z.infer<typeof B.WireBindingSchema>;
export type WireBindingInput = z.input<typeof B.WireBindingSchema>;
/** One earlier turn of the conversation in `binding.history`. */
export type HistoryMessage = z.infer<typeof B.HistoryMessageSchema>;
export type RunLimits = z.infer<typeof B.RunLimitsSchema>;
export type InitializeParams = z.infer<typeof I.InitializeParamsSchema>;
export type InitializeResult = z.infer<typeof I.InitializeResultSchema>;
export type RunInfo = z.infer<typeof R.RunInfoSchema>;
export type ExternalPointers = z.infer<typeof R.ExternalPointersSchema>;
export type Resume = z.infer<typeof R.ResumeSchema>;
export type RunParams = z.infer<typeof R.RunParamsSchema>;
export type RunParamsInput = z.input<typeof R.RunParamsSchema>;
export type RunStatus = z.infer<typeof R.RunStatusSchema>;
export type RunResult = z.infer<typeof R.RunResultSchema>;
export type RunResultInput = z.input<typeof R.RunResultSchema>;
export type CancelParams = z.infer<typeof R.CancelParamsSchema>;
export type RunMessageParams = z.infer<typeof R.RunMessageParamsSchema>;
export type RunMessageResult = z.infer<typeof R.RunMessageResultSchema>;
export type Update = z.infer<typeof U.UpdateSchema>;
export type UpdateInput = z.input<typeof U.UpdateSchema>;
export type UpdateKind = Update['kind'];
export type RunUpdateParams = z.infer<typeof U.RunUpdateParamsSchema>;
export type ModelCompleteParams = z.infer<typeof H.ModelCompleteParamsSchema>;
export type ModelCompleteResult = z.infer<typeof H.ModelCompleteResultSchema>;
export type KbRetrieveResult = z.infer<typeof H.KbRetrieveResultSchema>;
export type ToolCallResult = z.infer<typeof H.ToolCallResultSchema>;
export type FsReadResult = z.infer<typeof H.FsReadResultSchema>;
export type ApprovalRequestParams = z.infer<typeof H.ApprovalRequestParamsSchema>;
export type ApprovalRequestResult = z.infer<typeof H.ApprovalRequestResultSchema>;
