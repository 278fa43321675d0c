/** `GET /v1/sessions/:id` and `POST /v1/sessions/:id/messages` (docs/http-api.md, "Bot-platform endpoints"). */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { ChatEvent } from '../../../sdk/protocol/types.js';
import type { Store } from '../../state/store.js';
import { tenantOfSession } from '../../state/tenancy.js';
import { principalOf, requireRole } from '../auth.js';
import type { ApiDeps } from '../deps.js';
import { dispatchFor } from '../dispatchEvent.js';
import { ApiProblem } from '../problems.js';
import { AUTH_ERRORS, DISPATCH_RESPONSES, FollowUpSchema, IdParams, ProblemSchema, SessionSchema } from '../schemas.js';

/** Throws 404 unless session `id` exists in `tenant` (another tenant's is indistinguishable from a missing one). */
export function assertSessionOfTenant(store: Store, id: string, tenant: string): void {
  if (tenantOfSession(store, id) !== tenant) throw new ApiProblem(404, 'not_found', `no session ${id}`);
}

/** The platform, bot and conversation of a session: from its first `message.received`. */
function conversationOf(store: Store, sessionId: string): Pick<ChatEvent, 'platform' | 'bot' | 'conversation'> {
  const batch = 500;
  for (let after = 0; ;) {
    const events = store.readEvents(sessionId, after, batch);
    const first = events.find((e) => e.type === 'message.received');
    if (first) {
      const { platform, bot, conversation } = (first.data as { event: ChatEvent }).event;
      return { platform, bot, conversation };
    }
    if (events.length < batch)
      throw new ApiProblem(409, 'conflict', `session ${sessionId} has no message to follow up on`);
    after = events[events.length - 1]!.seq;
  }
}

/** Register the session routes. */
export async function sessionsRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  const api = app.withTypeProvider<ZodTypeProvider>();
  api.get('/v1/sessions/:id', {
    schema: {
      summary: 'A session: its runs and its transcript',
      tags: ['platform'],
      security: [{ bearer: [] }],
      params: IdParams,
      response: { 200: SessionSchema, 400: ProblemSchema, ...AUTH_ERRORS },
    },
    preValidation: requireRole('platform', 'approver', 'admin', 'viewer'),
    handler: async (request) => {
      assertSessionOfTenant(deps.store, request.params.id, principalOf(request).tenant);
      const view = deps.store.session(request.params.id);
      return {
        sessionId: view.sessionId,
        bindingId: view.bindingId,
        maxSeq: view.maxSeq,
        paused: view.paused,
        runs: view.runs.map((r) => ({
          runId: r.runId,
          runner: r.runner,
          status: r.status,
          reason: r.reason,
          usage: r.usage as never,
        })),
        transcript: view.transcript,
      };
    },
  });

  api.post('/v1/sessions/:id/messages', {
    schema: {
      summary: "A follow-up message in the session's conversation (the binding's steering applies)",
      tags: ['platform'],
      security: [{ bearer: [] }],
      params: IdParams,
      body: FollowUpSchema,
      response: DISPATCH_RESPONSES,
    },
    preValidation: requireRole('platform', 'admin'),
    handler: async (request, reply) => {
      const principal = principalOf(request);
      const sessionId = request.params.id;
      assertSessionOfTenant(deps.store, sessionId, principal.tenant);
      const body = request.body;
      const event = {
        id: body.id,
        type: 'message',
        ...conversationOf(deps.store, sessionId),
        sender: body.sender ?? { id: `api:${principal.tokenId}` },
        message: { parts: body.parts ?? [{ type: 'text', text: body.text! }] },
        receivedAt: new Date().toISOString(),
      };
      return reply.code(202).send(await dispatchFor(deps, event, principal.tenant));
    },
  });
}
