import type { z } from 'zod';
import * as H from './schemas/hostRequests.js';
import { InitializeParamsSchema, InitializeResultSchema } from './schemas/initialize.js';
import {
  CancelParamsSchema,
  RunMessageParamsSchema,
  RunMessageResultSchema,
  RunParamsSchema,
  RunResultSchema,
  ShutdownParamsSchema,
  ShutdownResultSchema,
} from './schemas/run.js';
import { RunUpdateParamsSchema } from './schemas/updates.js';

/** Who sends a message. */
export type Direction = 'host→runner' | 'runner→host';

interface RequestSpec {
  readonly kind: 'request';
  readonly direction: Direction;
  readonly params: z.ZodType;
  readonly result: z.ZodType;
  readonly summary: string;
}
interface NotificationSpec {
  readonly kind: 'notification';
  readonly direction: Direction;
  readonly params: z.ZodType;
  readonly summary: string;
}

const request = <P extends z.ZodType, R extends z.ZodType>(
  direction: Direction,
  params: P,
  result: R,
  summary: string,
) => ({ kind: 'request', direction, params, result, summary }) as const satisfies RequestSpec;
const notification = <P extends z.ZodType>(direction: Direction, params: P, summary: string) =>
  ({ kind: 'notification', direction, params, summary }) as const satisfies NotificationSpec;

/** Requests the host sends to a runner. */
export const RUNNER_METHODS = {
  initialize: request(
    'host→runner',
    InitializeParamsSchema,
    InitializeResultSchema,
    'First message; agrees the protocol version and capabilities.',
  ),
  run: request(
    'host→runner',
    RunParamsSchema,
    RunResultSchema,
    'Execute one run; resolves with the RunResult when it ends.',
  ),
  'run/message': request(
    'host→runner',
    RunMessageParamsSchema,
    RunMessageResultSchema,
    'Deliver a user message to the running run (steering `append`; only to a runner that declared `append`).',
  ),
  shutdown: request(
    'host→runner',
    ShutdownParamsSchema,
    ShutdownResultSchema,
    'Answer, then exit. The host escalates to signals if the runner does not.',
  ),
} as const;

/** Requests a runner sends to the host; each is checked against the grants of the run it names. */
export const HOST_METHODS = {
  'state/get': request('runner→host', H.StateGetParamsSchema, H.StateGetResultSchema, 'Read a host-owned state value.'),
  'state/set': request(
    'runner→host',
    H.StateSetParamsSchema,
    H.StateSetResultSchema,
    'Write a host-owned state value (size-capped).',
  ),
  'state/delete': request(
    'runner→host',
    H.StateDeleteParamsSchema,
    H.StateDeleteResultSchema,
    'Delete a host-owned state value.',
  ),
  'model/complete': request(
    'runner→host',
    H.ModelCompleteParamsSchema,
    H.ModelCompleteResultSchema,
    'Call a granted model through the host gateway.',
  ),
  'kb/retrieve': request(
    'runner→host',
    H.KbRetrieveParamsSchema,
    H.KbRetrieveResultSchema,
    'Retrieve chunks from a granted knowledge base.',
  ),
  'tool/list': request(
    'runner→host',
    H.ToolListParamsSchema,
    H.ToolListResultSchema,
    'List the tools of a granted MCP server that this run may call, with their input schemas.',
  ),
  'tool/call': request(
    'runner→host',
    H.ToolCallParamsSchema,
    H.ToolCallResultSchema,
    'Call an allowed tool of a granted MCP server.',
  ),
  'fs/read': request('runner→host', H.FsReadParamsSchema, H.FsReadResultSchema, 'Read a file under the path policy.'),
  'fs/write': request(
    'runner→host',
    H.FsWriteParamsSchema,
    H.FsWriteResultSchema,
    'Write a file under the path policy.',
  ),
  'approval/request': request(
    'runner→host',
    H.ApprovalRequestParamsSchema,
    H.ApprovalRequestResultSchema,
    'Ask for approval of a risky action.',
  ),
} as const;

/** Notifications, in either direction. */
export const NOTIFICATIONS = {
  'run/update': notification('runner→host', RunUpdateParamsSchema, 'One streamed update of a run.'),
  'run/cancel': notification(
    'host→runner',
    CancelParamsSchema,
    'Stop the run; the runner answers `run` with status `cancelled`.',
  ),
  'model/delta': notification(
    'host→runner',
    H.ModelDeltaParamsSchema,
    'Streamed text of a pending `model/complete` that set `streamId`.',
  ),
} as const;

export type RunnerMethodName = keyof typeof RUNNER_METHODS;
export type HostMethodName = keyof typeof HOST_METHODS;
export type NotificationName = keyof typeof NOTIFICATIONS;

/** Params type of any request or notification method. */
export type ParamsOf<M extends RunnerMethodName | HostMethodName | NotificationName> = z.input<
  (typeof RUNNER_METHODS & typeof HOST_METHODS & typeof NOTIFICATIONS)[M]['params']
>;
/** Result type of a request method (as parsed). */
export type ResultOf<M extends RunnerMethodName | HostMethodName> = z.output<
  (typeof RUNNER_METHODS & typeof HOST_METHODS)[M]['result']
>;

/** Host request method names, for capability lists. */
export const HOST_METHOD_NAMES = Object.keys(HOST_METHODS) as HostMethodName[];
