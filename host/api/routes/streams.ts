/**
 * `GET /v1/sessions/:id/events` and `GET /v1/runs/:id/events` (docs/http-api.md, SSE): the stored events of a session
 * or a run, caught up from `Last-Event-ID` / `?after=` and then live, as Server-Sent Events.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { principalOf, requireRole } from '../auth.js';
import type { ApiDeps } from '../deps.js';
import { ApiProblem } from '../problems.js';
import { AUTH_ERRORS, IdParams, ProblemSchema } from '../schemas.js';
import { EventStreams, parseStartSeq } from '../streams/index.js';
import type { StreamTarget } from '../streams/eventStream.js';
import { refusalDetail, STREAMS_RETRY_AFTER_SECONDS, type StreamQuota } from '../streams/streamQuota.js';
import { assertSessionOfTenant } from './sessions.js';
import { runOfTenant } from './runs.js';

// Strict: `?after[]=5` or any other key is a 400, never silently a replay from the start.
const StartQuery = z.strictObject({ after: z.string().optional() });

/** The SSE routes' own state: the server's streams (created with the first stream: the host is read only then). */
export interface StreamRoutes {
  /** Streams open now (`paddock_sse_clients`). */
  clients(): number;
  /** End every open stream cleanly (at stop; clients reconnect with Last-Event-ID). */
  endAll(): void;
}

/** Register the two stream routes; returns what the server needs of them at stop and for metrics. */
export function streamsRoutes(app: FastifyInstance, deps: ApiDeps, quota: StreamQuota): StreamRoutes {
  const api = app.withTypeProvider<ZodTypeProvider>();
  let streams: EventStreams | undefined;
  const open = (request: FastifyRequest, reply: FastifyReply, target: Omit<StreamTarget, 'afterSeq'>) => {
    const headers = request.headers as { 'last-event-id'?: string };
    const start = parseStartSeq({
      lastEventId: headers['last-event-id'],
      after: (request.query as { after?: unknown }).after,
    });
    if (!start.ok)
      throw new ApiProblem(400, 'invalid_request', 'the stream start is not a seq', { errors: start.errors });
    streams ??= new EventStreams(deps.store);
    // Nothing may throw between taking a place and registering its release on 'close' below.
    const { tokenId, tenant } = principalOf(request);
    const admitted = quota.admit(tokenId, tenant);
    if (!admitted.ok)
      throw new ApiProblem(
        429,
        'too_many_streams',
        refusalDetail(admitted),
        { scope: admitted.scope, limit: admitted.limit },
        { 'retry-after': String(STREAMS_RETRY_AFTER_SECONDS) },
      );
    // From here the stream writes the response itself (status line, SSE headers, events).
    reply.hijack();
    // 'close' fires once however the stream ends (its run ended, the client left, a stall, a revocation, the stop).
    reply.raw.once('close', () => {
      admitted.lease.release();
      deps.metrics?.sseClients(-1);
    });
    deps.metrics?.sseClients(1);
    const handle = streams.serve(
      reply.raw,
      { ...target, afterSeq: start.afterSeq },
      { 'x-request-id': String(request.id) },
    );
    admitted.lease.attach(() => handle.end());
  };
  const schema = (summary: string) => ({
    summary,
    tags: ['platform'],
    security: [{ bearer: [] }],
    params: IdParams,
    querystring: StartQuery,
    response: { 400: ProblemSchema, ...AUTH_ERRORS },
  });

  api.get('/v1/sessions/:id/events', {
    schema: schema('The session’s stored events, then live (SSE; id = seq; resume with Last-Event-ID or ?after=)'),
    preValidation: requireRole('platform', 'approver', 'admin', 'viewer'),
    handler: async (request, reply) => {
      assertSessionOfTenant(deps.store, request.params.id, principalOf(request).tenant);
      open(request, reply, { sessionId: request.params.id });
    },
  });

  api.get('/v1/runs/:id/events', {
    schema: schema('The run’s stored events, then live, ending after its terminal event (SSE; id = session seq)'),
    preValidation: requireRole('platform', 'approver', 'admin', 'viewer'),
    handler: async (request, reply) => {
      const run = runOfTenant(deps.store, request.params.id, principalOf(request).tenant);
      open(request, reply, { sessionId: run.sessionId, runId: run.id });
    },
  });

  return { clients: () => streams?.clients ?? 0, endAll: () => streams?.endAll() };
}
