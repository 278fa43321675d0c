/**
 * The OpenAI-compatible endpoint (docs/http-api.md, "OpenAI-compatible endpoint"): `POST /v1/chat/completions`
 * dispatches the last user message to the binding `model` names (of the caller's tenant) and answers the run's reply,
 * streamed or whole; `GET /v1/models` lists the tenant's bindings it reaches. Errors are in OpenAI's shape.
 */
import type { DispatchTicket } from '../../dispatch/dispatcher.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Binding } from '../../bindings/schema.js';
import { ConfigRepo } from '../../bindings/configRepo.js';
import { matchBinding } from '../../bindings/routing.js';
import { HostError } from '../../errors.js';
import type { ApiDeps } from '../deps.js';
import { completion, completionIds } from '../openai/chunks.js';
import {
  modelNotFound,
  NO_RETRY,
  openAIError,
  OpenAIHttpError,
  outcomeError,
  problemAsOpenAIError,
  refusalError,
} from '../openai/errors.js';
import { refusalDetail, STREAMS_RETRY_AFTER_SECONDS, type StreamQuota } from '../streams/streamQuota.js';
import { firstSeqsDuring, followRun } from '../openai/followRun.js';
import { modelList, reachableBinding, tenantOf } from '../openai/models.js';
import { RunReply } from '../openai/reply.js';
import { streamReply } from '../openai/streamReply.js';
import { ChatCompletionRequestSchema, parseChatRequest, type ChatRequest } from '../openai/request.js';

/** What the OpenAI routes need of the started host. */
export type OpenAIRouteDeps = Pick<ApiDeps, 'store' | 'dispatcher'>;

/** The caller, as the server's auth hook sets it on the request. */
interface Principal {
  tokenId: string;
  tenant: string;
  role: string;
}

/** Roles that may use this endpoint (docs/http-api.md, "Tokens, tenants, roles"). */
const ROLES = new Set(['platform', 'admin']);
/** Roles that may list its models: a viewer reads what its tenant's admin reads, and completes nothing. */
const MODEL_READERS = new Set([...ROLES, 'viewer']);

/** Why a run this endpoint started is cancelled when its client goes away. */
export const DISCONNECT_REASON = 'the OpenAI-compatible client disconnected';

/** Why a run this endpoint started is cancelled when the token of its request stops being valid. */
export const TOKEN_ENDED_REASON = 'the API token of its OpenAI-compatible request was revoked or expired';

/** The caller of an OpenAI route (of `roles`), or a 401/403 in OpenAI's shape. */
function callerOf(request: FastifyRequest, roles = ROLES): Principal {
  const principal = (request as FastifyRequest & { principal?: Principal }).principal;
  if (!principal) throw openAIError(401, 'unauthorized', 'missing API token (Authorization: Bearer <paddock token>)');
  if (!roles.has(principal.role))
    throw openAIError(
      403,
      'forbidden',
      `a ${principal.role} token may not call this endpoint (it needs ${[...roles].join(' or ')})`,
    );
  return principal;
}

/** Register the OpenAI-compatible routes (in their own scope: their errors are OpenAI-shaped). */
export async function openaiRoutes(app: FastifyInstance, deps: OpenAIRouteDeps, quota: StreamQuota): Promise<void> {
  // Read while answering, never at registration (the OpenAPI generator builds the routes with no host).
  const dispatcher = () => deps.dispatcher;
  // The caller's tenant's bindings only (an index range): other tenants' are never read, nor could they answer.
  const bindings = (tenant: string) => new ConfigRepo(deps.store).listOfTenant<Binding>('binding', tenant);

  await app.register(async (scope) => {
    scope.setErrorHandler((error, _request, reply) => {
      if (error instanceof OpenAIHttpError) return reply.code(error.status).headers(error.headers).send(error.body);
      const { statusCode, code, message } = error as { statusCode?: number; code?: string; message?: string };
      // Fastify's own refusals of a body (malformed JSON, too large, wrong content type): the client's fault.
      const clientFault = statusCode !== undefined && statusCode >= 400 && statusCode < 500;
      if (clientFault && (code?.startsWith('FST_') || error instanceof SyntaxError))
        return reply
          .code(statusCode)
          .send(openAIError(statusCode, 'invalid_request', String(message), { param: 'body' }).body);
      throw error; // the server's own handler (problem+json, rewritten below)
    });
    // Refusals the rest of the server answers on these routes (auth, rate limit, shutdown) in OpenAI's shape too.
    scope.addHook('onSend', async (_request, reply, payload) => {
      if (!String(reply.getHeader('content-type') ?? '').startsWith('application/problem+json')) return payload;
      if (typeof payload !== 'string') return payload;
      reply.header('content-type', 'application/json; charset=utf-8');
      return JSON.stringify(problemAsOpenAIError(JSON.parse(payload) as Record<string, unknown>, reply.statusCode));
    });

    scope.get('/v1/models', async (request) => {
      const { tenant } = callerOf(request, MODEL_READERS);
      const objects = bindings(tenant);
      const created = new Map(objects.map((o) => [o.id, Math.floor(Date.parse(o.updatedAt) / 1000)]));
      return modelList(
        objects.map((o) => o.spec),
        tenant,
        (id) => created.get(id) ?? 0,
      );
    });

    scope.get<{ Params: { model: string } }>('/v1/models/:model', async (request) => {
      const { tenant } = callerOf(request, MODEL_READERS);
      const model = request.params.model;
      const objects = bindings(tenant);
      const listed = modelList(
        objects.map((o) => o.spec),
        tenant,
        () => 0,
      ).data.find((m) => m.id === model);
      if (!listed) throw modelNotFound(model);
      const object = objects.find((o) => o.id === model)!;
      return { ...listed, created: Math.floor(Date.parse(object.updatedAt) / 1000) };
    });

    scope.post(
      '/v1/chat/completions',
      // The schema documents the body (OpenAPI); its problems are answered by parseChatRequest, every one at once.
      { schema: { body: ChatCompletionRequestSchema }, attachValidation: true },
      async (request, reply) => {
        const { tenant, tokenId } = callerOf(request);
        const parsed = parseChatRequest(request.body, request.headers);
        if (parsed instanceof OpenAIHttpError) throw parsed;
        const own = bindings(tenant)
          .map((o) => o.spec)
          .filter((b) => tenantOf(b) === tenant);
        // `model` must be the binding routing picks for this event: never a broader one answering for it.
        if (!reachableBinding(own, tenant, parsed.model) || matchBinding(own, parsed.event)?.id !== parsed.model)
          throw modelNotFound(parsed.model);
        // A completion, streamed or whole, holds its connection for its run's duration: it is an open stream like the
        // SSE routes', counted in the same caps and ended (its run cancelled) when its token is revoked or expires.
        // Taken before the dispatch, so a refusal starts no run.
        const admitted = quota.admit(tokenId, tenant);
        if (!admitted.ok)
          throw openAIError(429, 'too_many_streams', refusalDetail(admitted), {
            headers: { 'retry-after': String(STREAMS_RETRY_AFTER_SECONDS) },
          });
        // 'close' fires once however the request ends: an error answer, the end of the stream, the client leaving.
        reply.raw.once('close', admitted.lease.release);
        const tokenEnded = new AbortController();
        // Called at each recheck while the token is invalid and the request open; answer() acts on the first.
        admitted.lease.attach(() => tokenEnded.abort());
        const dispatched = await dispatchFor(parsed, tenant);
        const { ticket } = dispatched;
        if (ticket.bindingId !== parsed.model) {
          // Routing changed between the check and the dispatch (an apply): never answer for another binding.
          if (startedBy(ticket)) dispatcher().cancel(ticket.runId, 'routed to another binding than its model');
          throw modelNotFound(parsed.model);
        }
        return answer(request, reply, parsed, dispatched, tokenEnded.signal);
      },
    );
  });

  /** Dispatch the request's event for `tenant`; a refusal becomes OpenAI's error. */
  async function dispatchFor(parsed: ChatRequest, tenant: string) {
    try {
      const { value: ticket, firstSeq } = await firstSeqsDuring(deps.store, () =>
        dispatcher().dispatch(parsed.event, {}, { tenant }),
      );
      // A redelivered event id follows the first delivery's run from its start.
      return { ticket, afterSeq: (firstSeq.get(ticket.runId) ?? 1) - 1 };
    } catch (error) {
      if (error instanceof HostError && error.code === 'DISPATCH_REFUSED')
        throw refusalError(String(error.data.reason), error.message, parsed.model);
      if (error instanceof HostError && error.code === 'INVALID_INPUT')
        throw openAIError(400, 'invalid_event', error.message);
      throw error;
    }
  }

  /**
   * Follow the run to its end and answer it, streamed or whole; a client that goes away cancels the run, and so does
   * the token of the request being revoked or expiring (`tokenEnded`): a stream is then cut, a whole answer is 401.
   */
  async function answer(
    request: FastifyRequest,
    reply: FastifyReply,
    parsed: ChatRequest,
    dispatched: { ticket: DispatchTicket; afterSeq: number },
    tokenEnded: AbortSignal,
  ) {
    const { ticket, afterSeq } = dispatched;
    const gone = new AbortController();
    const res = reply.raw;
    const onClose = () => {
      if (res.writableFinished || gone.signal.aborted) return;
      gone.abort();
      // Only the request that started the run cancels it: a redelivery's client did not start it.
      if (startedBy(ticket)) dispatcher().cancelWherever(ticket.runId, DISCONNECT_REASON);
    };
    res.on('close', onClose);
    // A write racing the client's close must not become an unhandled 'error' (the close has cancelled the run).
    res.on('error', () => undefined);
    // The client may have gone while the event was dispatched, before the listener.
    if (request.raw.socket?.destroyed) onClose();
    const stop = new AbortController();
    gone.signal.addEventListener('abort', () => stop.abort(), { once: true });
    const onTokenEnded = () => {
      // Cancelled with its own reason first (a later disconnect's cancel changes nothing): the run ends at once.
      if (startedBy(ticket)) dispatcher().cancelWherever(ticket.runId, TOKEN_ENDED_REASON);
      stop.abort();
      if (parsed.stream) res.destroy();
    };
    tokenEnded.addEventListener('abort', onTokenEnded, { once: true });
    // The token may have ended while the event was dispatched, before the listener.
    if (tokenEnded.aborted) onTokenEnded();
    const ids = completionIds(ticket.runId, parsed.model);
    const run = new RunReply();
    const events = followRun(deps.store, { sessionId: ticket.sessionId, runId: ticket.runId, afterSeq }, stop.signal);
    const headers = {
      'x-paddock-run-id': ticket.runId,
      'x-paddock-session-id': ticket.sessionId,
    };

    if (!parsed.stream) {
      for await (const event of events) run.take(event);
      if (gone.signal.aborted) return reply.hijack();
      if (tokenEnded.aborted)
        throw openAIError(
          401,
          'unauthorized',
          'the API token of this request was revoked or expired while its run was active; ' +
            (!startedBy(ticket)
              ? 'the run belongs to an earlier request (this event id, or a message appended to it) and was not ' +
                'cancelled'
              : 'the run was cancelled'),
          { headers: { ...NO_RETRY, ...headers } },
        );
      if (run.end!.status !== 'completed') {
        const failure = outcomeError(run.end!.status, run.end!.reason);
        throw openAIError(failure.status, failure.body.error.code, failure.body.error.message, {
          headers: { ...failure.headers, ...headers },
        });
      }
      return reply.headers(headers).send(completion(ids, run.text, run.end!));
    }

    reply.hijack();
    // Headers the server's hooks set (x-request-id) go out with the stream: a hijacked reply sends nothing by itself.
    for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) res.setHeader(name, value);
    await streamReply(res, events, { ids, includeUsage: parsed.includeUsage, gone: stop.signal, headers });
  }
}

/** The request's own event started or queued the run: a redelivery or a message appended to a running run did not. */
function startedBy(ticket: DispatchTicket): boolean {
  return ticket.status === 'started' || ticket.status === 'queued';
}
