/**
 * Errors of the OpenAI-compatible endpoint in OpenAI's own shape (`{ error: { message, type, param, code } }`):
 * OpenAI clients parse that shape, not problem+json (docs/http-api.md, "OpenAI-compatible endpoint").
 */
import { clip } from '../../util/clip.js';

/** The body of an OpenAI-shaped error. */
export interface OpenAIErrorBody {
  error: {
    message: string;
    type: string;
    param: string | null;
    code: string;
    /** Every problem of a malformed request at once (`path` as `messages[0].content`). */
    errors?: { path: string; message: string }[];
  };
}

/** An OpenAI-shaped error with its HTTP status and headers. */
export class OpenAIHttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: OpenAIErrorBody,
    readonly headers: Record<string, string> = {},
  ) {
    super(body.error.message);
  }
}

/** OpenAI's error `type` for an HTTP status. */
function typeFor(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_error';
  return status >= 500 ? 'server_error' : 'invalid_request_error';
}

/** Build an OpenAI-shaped error. */
export function openAIError(
  status: number,
  code: string,
  message: string,
  extra: { param?: string | null; errors?: { path: string; message: string }[]; headers?: Record<string, string> } = {},
): OpenAIHttpError {
  const body: OpenAIErrorBody = {
    error: { message, type: typeFor(status), param: extra.param ?? null, code },
  };
  if (extra.errors) body.error.errors = extra.errors;
  return new OpenAIHttpError(status, body, extra.headers);
}

/**
 * A refused dispatch (HostError `DISPATCH_REFUSED` `data.reason`) as an OpenAI error: `no_binding` is OpenAI's
 * `model_not_found` (404), `queue_full` 429 with `Retry-After: 1` (the client retries), the rest keep the statuses
 * of `POST /v1/events`.
 */
export function refusalError(reason: string, message: string, model: string): OpenAIHttpError {
  switch (reason) {
    case 'no_binding':
      return modelNotFound(model);
    case 'queue_full':
      return openAIError(429, 'queue_full', clip(message, 500), { headers: { 'retry-after': '1' } });
    case 'session_paused':
      return openAIError(409, 'session_paused', clip(message, 500), { headers: NO_RETRY });
    case 'invalid_event':
      return openAIError(400, 'invalid_event', clip(message, 500));
    default:
      // binding_disabled, config_invalid, runner_unavailable, runner_tampered, sandbox refusals: the binding cannot
      // run now.
      return openAIError(422, reason, clip(message, 500), { param: 'model' });
  }
}

/** The `model` names no binding of the caller's tenant that this endpoint reaches. */
export function modelNotFound(model: string): OpenAIHttpError {
  return openAIError(
    404,
    'model_not_found',
    `The model ${JSON.stringify(clip(model, 100))} does not exist: no binding of your tenant by that id takes ` +
      `OpenAI-compatible requests (GET /v1/models lists those that do)`,
    { param: 'model' },
  );
}

/**
 * `x-should-retry: false`: the official clients retry 409 and 5xx answers by default (twice), which would dispatch
 * the same message again; a run that failed or was cancelled is an answer, not a transient error.
 */
export const NO_RETRY: Readonly<Record<string, string>> = { 'x-should-retry': 'false' };

/** How a run that did not complete answers a non-streaming request: its HTTP status and code. */
export function outcomeError(status: string, reason: string): OpenAIHttpError {
  const code = `run_${status}`;
  const message = `the paddock run ended ${status.replace('_', ' ')}: ${clip(reason, 500)}`;
  const http = status === 'timed_out' ? 504 : status === 'cancelled' ? 409 : status === 'interrupted' ? 503 : 502;
  return openAIError(http, code, message, { headers: NO_RETRY });
}

/**
 * A problem+json body another part of the server answered on an OpenAI route (the server's auth, rate limit or
 * shutdown refusals) in OpenAI's shape, keeping its code and field errors.
 */
export function problemAsOpenAIError(problem: Record<string, unknown>, status: number): OpenAIErrorBody {
  const errors = Array.isArray(problem.errors) ? (problem.errors as { path: string; message: string }[]) : undefined;
  const message = typeof problem.detail === 'string' ? problem.detail : String(problem.title ?? `HTTP ${status}`);
  const body: OpenAIErrorBody = {
    error: {
      message,
      type: typeFor(status),
      param: errors?.[0]?.path ?? null,
      code: typeof problem.code === 'string' ? problem.code : `http_${status}`,
    },
  };
  if (errors) body.error.errors = errors;
  return body;
}
