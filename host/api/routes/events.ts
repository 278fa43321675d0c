/** `POST /v1/events`: a bot platform's chat event, dispatched for the token's tenant (docs/http-api.md). */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { ChatEventSchema } from '../../../sdk/protocol/schemas/event.js';
import { principalOf, requireRole } from '../auth.js';
import type { ApiDeps } from '../deps.js';
import { dispatchFor } from '../dispatchEvent.js';
import { DISPATCH_RESPONSES } from '../schemas.js';

/** Register the event intake. */
export async function eventsRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.withTypeProvider<ZodTypeProvider>().post('/v1/events', {
    schema: {
      summary: "Dispatch a chat event for the token's tenant",
      tags: ['platform'],
      security: [{ bearer: [] }],
      body: ChatEventSchema,
      response: DISPATCH_RESPONSES,
    },
    preValidation: requireRole('platform', 'admin'),
    handler: async (request, reply) => {
      const answer = await dispatchFor(deps, request.body, principalOf(request).tenant);
      return reply.code(202).send(answer);
    },
  });
}
