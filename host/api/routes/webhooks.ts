/** `POST|GET /v1/webhooks`, `DELETE /v1/webhooks/:id`, `GET /v1/webhooks/:id/deliveries` (docs/http-api.md). */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { HostError } from '../../errors.js';
import type { Store } from '../../state/store.js';
import { createWebhook, listDeliveries, listWebhooks, removeWebhook, WEBHOOK_EVENTS } from '../webhooks/registry.js';

/** What the routes need from the server. */
export interface WebhooksRouteDeps {
  store: Store;
}

/** The caller, as the server lane's auth hook sets it on the request (ISSUE13 contract). */
interface Principal {
  tokenId: string;
  tenant: string;
  role: 'platform' | 'approver' | 'admin';
}

const ROLES: Principal['role'][] = ['platform', 'admin'];

const Webhook = z.object({
  id: z.string(),
  tenant: z.string(),
  url: z.string(),
  events: z.array(z.string()),
  createdAt: z.string(),
  createdBy: z.string(),
  removedAt: z.string().nullable(),
});
const Delivery = z.object({
  id: z.string(),
  webhookId: z.string(),
  runId: z.string(),
  type: z.string(),
  state: z.enum(['pending', 'delivered', 'failed']),
  attempts: z.int(),
  lastStatus: z.int().nullable(),
  lastError: z.string().nullable(),
  nextAttemptAt: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
  log: z.array(
    z.object({
      attempt: z.int(),
      at: z.string(),
      status: z.int().nullable(),
      error: z.string().nullable(),
      durationMs: z.int(),
    }),
  ),
});

/** A problem+json answer (the server lane's ApiProblem replaces this once merged). */
function problem(
  request: FastifyRequest,
  reply: FastifyReply,
  status: number,
  code: string,
  detail: string,
  extra = {},
) {
  const title = { 400: 'Invalid request', 403: 'Forbidden', 404: 'Not found' }[status] ?? 'Error';
  return reply
    .code(status)
    .type('application/problem+json')
    .send({
      type: `https://paddock.dev/problems/${code}`,
      title,
      status,
      detail,
      instance: request.url,
      requestId: request.id,
      code,
      ...extra,
    });
}

/** The caller if its role may use webhooks; otherwise the 403 was sent and undefined is returned. */
function caller(request: FastifyRequest, reply: FastifyReply): Principal | undefined {
  const principal = (request as FastifyRequest & { principal?: Principal }).principal;
  if (!principal) throw new Error('webhooksRoutes needs the auth hook (request.principal)');
  if (ROLES.includes(principal.role)) return principal;
  void problem(request, reply, 403, 'forbidden', `a ${principal.role} token may not manage webhooks`, {
    requiredRole: ROLES,
    role: principal.role,
  });
  return undefined;
}

/** Map the registry's errors to problems; rethrow anything else (the server's handler answers 500). */
function answerError(request: FastifyRequest, reply: FastifyReply, error: unknown) {
  if (error instanceof HostError && error.code === 'INVALID_INPUT')
    return problem(request, reply, 400, 'invalid_request', error.message, { errors: error.data.errors ?? [] });
  if (error instanceof HostError && error.code === 'NOT_FOUND')
    return problem(request, reply, 404, 'not_found', error.message);
  throw error;
}

/** Register the webhook routes (every one needs a platform or admin token; objects are the token's tenant's). */
export function webhooksRoutes(app: FastifyInstance, deps: WebhooksRouteDeps): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.post(
    '/v1/webhooks',
    {
      schema: {
        body: z.object({
          url: z.string().min(1).max(4096),
          events: z.array(z.enum(WEBHOOK_EVENTS)).min(1).max(WEBHOOK_EVENTS.length).optional(),
        }),
        response: { 201: Webhook.extend({ secret: z.string() }) },
      },
    },
    async (request, reply) => {
      const who = caller(request, reply);
      if (!who) return reply;
      try {
        const created = createWebhook(deps.store, {
          tenant: who.tenant,
          ...request.body,
          actor: `token:${who.tokenId}`,
        });
        return reply.code(201).send(created);
      } catch (error) {
        return answerError(request, reply, error);
      }
    },
  );
  r.get(
    '/v1/webhooks',
    { schema: { response: { 200: z.object({ webhooks: z.array(Webhook) }) } } },
    async (request, reply) => {
      const who = caller(request, reply);
      if (!who) return reply;
      return reply.send({ webhooks: listWebhooks(deps.store, who.tenant) });
    },
  );
  r.delete('/v1/webhooks/:id', { schema: { params: z.object({ id: z.string().max(64) }) } }, async (request, reply) => {
    const who = caller(request, reply);
    if (!who) return reply;
    try {
      removeWebhook(deps.store, who.tenant, request.params.id, `token:${who.tokenId}`);
      return reply.code(204).send();
    } catch (error) {
      return answerError(request, reply, error);
    }
  });
  r.get(
    '/v1/webhooks/:id/deliveries',
    {
      schema: {
        params: z.object({ id: z.string().max(64) }),
        querystring: z.object({ limit: z.coerce.number().int().min(1).max(500).default(100) }),
        response: { 200: z.object({ deliveries: z.array(Delivery) }) },
      },
    },
    async (request, reply) => {
      const who = caller(request, reply);
      if (!who) return reply;
      try {
        const deliveries = listDeliveries(deps.store, who.tenant, request.params.id, request.query.limit).map((d) => ({
          ...d,
          nextAttemptAt: d.state === 'pending' ? new Date(d.nextAttemptAt).toISOString() : null,
        }));
        return reply.send({ deliveries });
      } catch (error) {
        return answerError(request, reply, error);
      }
    },
  );
}
