/**
 * problem+json errors of `paddock serve` (RFC 9457; docs/http-api.md, "Conventions"): one shape for every error the
 * server answers, a stable `code`, and nothing of an unexpected error's message or stack.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { HostError } from '../errors.js';

/** Where problem types live (`type` is this plus the code). */
export const PROBLEM_BASE = 'https://paddock.dev/problems/';

/** The media type of every error answer. */
export const PROBLEM_MEDIA_TYPE = 'application/problem+json';

/** One field a request got wrong. */
export interface FieldError {
  path: string;
  message: string;
}

/** Titles of the stable codes (docs/http-api.md). */
const TITLES: Record<string, string> = {
  invalid_request: 'The request is not valid',
  unauthorized: 'Authentication required',
  forbidden: 'Not allowed for this token',
  not_found: 'Not found',
  conflict: 'Conflict',
  approval_not_pending: 'The approval is not pending',
  wider_than_asked: 'Wider than the approval asked for',
  already_revoked: 'The grant is already revoked',
  no_binding: 'No binding routes this event',
  binding_disabled: 'The binding is disabled',
  invalid_event: 'The event is not valid',
  session_paused: 'The session is paused',
  queue_full: 'The queue is full',
  rate_limited: 'Too many requests',
  too_many_streams: 'Too many open streams',
  server_busy: 'The server is busy',
  headers_too_large: 'The request headers are too large',
  request_timeout: 'The request did not arrive in time',
  payload_too_large: 'The body is too large',
  unsupported_media_type: 'Unsupported media type',
  shutting_down: 'The server is stopping',
  not_ready: 'The server is not ready',
  store_unavailable: 'The state store is unavailable',
  internal: 'Internal server error',
};

/** An error the server answers as a problem: status, stable code, detail, extra members, extra headers. */
export class ApiProblem extends Error {
  override readonly name = 'ApiProblem';
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
  }
}

/** `a.b[0].c` from an instance path `/a/b/0/c` (the spelling of docs/http-api.md and the CLI's config errors). */
export function pathOfPointer(pointer: string, prefix = ''): string {
  const parts = pointer.split('/').filter((p) => p !== '');
  const joined = parts.reduce<string>(
    (acc, part) => (/^\d+$/.test(part) ? `${acc}[${part}]` : acc ? `${acc}.${part}` : part),
    '',
  );
  return prefix && joined ? `${prefix}.${joined}` : prefix || joined;
}

/** The HTTP status of a dispatch refusal reason (docs/http-api.md, "Bot-platform endpoints"). */
export function refusalStatus(reason: string): number {
  switch (reason) {
    case 'session_paused':
      return 409;
    case 'queue_full':
      return 429;
    case 'invalid_event':
      return 400;
    default:
      return 422; // no_binding, binding_disabled and any plan refusal to come
  }
}

/** A HostError as the problem it is, or undefined when it is not one a client may see. */
export function problemOfHostError(error: HostError): ApiProblem | undefined {
  switch (error.code) {
    case 'DISPATCH_REFUSED': {
      const reason = String(error.data.reason ?? 'refused');
      const headers: Record<string, string> = reason === 'queue_full' ? { 'retry-after': '1' } : {};
      const extra: Record<string, unknown> = { reason };
      for (const key of ['bindingId', 'sessionId'] as const)
        if (error.data[key] !== undefined) extra[key] = error.data[key];
      return new ApiProblem(refusalStatus(reason), reason, error.message, extra, headers);
    }
    case 'INVALID_INPUT': {
      const field = typeof error.data.field === 'string' ? error.data.field : '';
      const reason = typeof error.data.reason === 'string' ? error.data.reason : undefined;
      const status = reason === 'event_too_large' ? 413 : 400;
      return new ApiProblem(status, status === 413 ? 'payload_too_large' : 'invalid_request', error.message, {
        ...(reason ? { reason } : {}),
        errors: [{ path: field, message: error.message }],
      });
    }
    case 'NOT_FOUND':
      return new ApiProblem(404, 'not_found', error.message);
    case 'SESSION_PAUSED':
      return new ApiProblem(409, 'session_paused', error.message);
    case 'QUOTA_EXCEEDED': {
      const retry = Number(error.data.retryAfterSeconds);
      return new ApiProblem(
        429,
        'quota_exceeded',
        error.message,
        { reason: String(error.data.reason ?? 'quota') },
        Number.isFinite(retry) && retry > 0 ? { 'retry-after': String(retry) } : {},
      );
    }
    case 'STATE_UNAVAILABLE':
      // The store's location (even masked) is the operator's, not the client's: the log has it, by request id.
      return new ApiProblem(
        503,
        'store_unavailable',
        'the state store cannot be reached now; retry (an event is deduplicated by its id: sending it again is safe)',
        {},
        { 'retry-after': '1' },
      );
    default:
      return undefined;
  }
}

/** Every field problem of a schema validation error, all at once, each with its path. */
function validationProblem(error: FastifyError): ApiProblem {
  const context = (error as { validationContext?: string }).validationContext ?? 'body';
  const errors: FieldError[] = (error.validation ?? []).map((v) => ({
    path: pathOfPointer(v.instancePath, context === 'body' ? '' : context),
    message: v.message ?? 'invalid',
  }));
  const detail = errors.map((e) => `${e.path || context}: ${e.message}`).join('; ');
  return new ApiProblem(400, 'invalid_request', detail, { errors });
}

/**
 * The problem an error thrown while serving a request is answered with. Anything unexpected is a 500 whose body
 * says only that (its message and stack stay in the log, keyed by the request id).
 */
export function problemOf(error: unknown): ApiProblem | undefined {
  if (error instanceof ApiProblem) return error;
  if (error instanceof HostError) return problemOfHostError(error);
  const fe = error as FastifyError;
  if (hasZodFastifySchemaValidationErrors(fe)) return validationProblem(fe);
  // Fastify's own client errors (bad JSON, too large, wrong media type): their messages are Fastify's, not ours.
  if (
    typeof fe?.statusCode === 'number' &&
    fe.statusCode >= 400 &&
    fe.statusCode < 500 &&
    fe.code?.startsWith('FST_')
  ) {
    if (fe.statusCode === 413)
      return new ApiProblem(413, 'payload_too_large', 'the request body is larger than the server takes');
    if (fe.statusCode === 415)
      return new ApiProblem(415, 'unsupported_media_type', 'send the body as application/json');
    return new ApiProblem(400, 'invalid_request', fe.message, { errors: [{ path: '', message: fe.message }] });
  }
  return undefined;
}

/** The problem+json body of `problem` answering `request`. */
export function problemBody(problem: ApiProblem, request: Pick<FastifyRequest, 'id' | 'url'>): Record<string, unknown> {
  return {
    type: `${PROBLEM_BASE}${problem.code}`,
    title: TITLES[problem.code] ?? problem.code,
    status: problem.status,
    detail: problem.detail,
    instance: request.url.split('?')[0],
    requestId: request.id,
    code: problem.code,
    ...problem.extra,
  };
}

/** Send `problem` as the answer to `request`. */
export function sendProblem(reply: FastifyReply, problem: ApiProblem): FastifyReply {
  for (const [name, value] of Object.entries(problem.headers)) reply.header(name, value);
  return reply
    .code(problem.status)
    .type(PROBLEM_MEDIA_TYPE)
    .serializer((body: unknown) => JSON.stringify(body))
    .send(problemBody(problem, reply.request));
}

/** The generic 500: the same for every unexpected error, so nothing of it leaks. */
export const INTERNAL_PROBLEM = new ApiProblem(
  500,
  'internal',
  'the server failed to answer this request; the operator finds the cause in its log by the request id',
);
