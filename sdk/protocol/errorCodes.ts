/**
 * JSON-RPC error codes used on the runner protocol wire.
 *
 * The standard JSON-RPC 2.0 codes, plus paddock's reserved range -32000..-32049 (inside the
 * "implementation-defined server error" range of the spec). A code never changes meaning once
 * released; clients branch on the code, never on the message text.
 */
export const ErrorCodes = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,

  ConnectionClosed: -32000,
  RunnerExited: -32001,
  RunnerUnresponsive: -32002,
  PolicyDenied: -32003,
  QuotaExceeded: -32004,
  InvalidMessage: -32005,
  NotSupported: -32006,
  RunNotActive: -32007,
  RateLimited: -32008,
  RequestCancelled: -32009,
  ProtocolVersionUnsupported: -32010,
  RunnerBusy: -32011,
  NotFound: -32012,
  UpstreamFailed: -32013,
} as const;

/** Name of an error code, e.g. `"PolicyDenied"`. */
export type ErrorCodeName = keyof typeof ErrorCodes;

/** One of the numeric codes in {@link ErrorCodes}. */
export type ErrorCode = (typeof ErrorCodes)[ErrorCodeName];

/** What each code means; rendered into docs/protocol.md. */
export const ERROR_CODE_MEANINGS: Record<ErrorCodeName, string> = {
  ParseError: 'A line was not valid JSON.',
  InvalidRequest: 'The message is not a valid JSON-RPC 2.0 request.',
  MethodNotFound: 'The method does not exist or is not handled by this peer.',
  InvalidParams: 'The params failed schema validation; `data` holds the formatted issues.',
  InternalError: 'The peer failed while handling a valid request. Never used for a client fault.',
  ConnectionClosed: 'The connection closed before the request was answered.',
  RunnerExited: 'The runner process exited while the request was pending.',
  RunnerUnresponsive: 'The runner did not answer within the time limit.',
  PolicyDenied: "The host refused the request under this run's grants or policy; `data.deniedBy` names the rule.",
  QuotaExceeded: 'A size, byte, count or budget limit was exceeded; `data.limit` names it.',
  InvalidMessage: 'A message failed validation (e.g. an invalid run/update); the run fails with protocol_error.',
  NotSupported: 'The method is part of the protocol but this host (or runner) does not provide it yet.',
  RunNotActive: 'The request names a run that is not active on this connection.',
  RateLimited: 'Too many runner requests in the current window; `data.retryAfterMs` says when to retry.',
  RequestCancelled: 'The request was cancelled because its run was cancelled or ended.',
  ProtocolVersionUnsupported: 'The peer speaks a protocol version this side does not support.',
  RunnerBusy: 'The runner is already executing a run and does not accept another one.',
  NotFound: 'The named resource does not exist (or is not visible to this run).',
  UpstreamFailed: 'A provider, MCP server or retriever behind the host gateway failed; `data` holds its status.',
};
