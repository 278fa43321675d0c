/** `GET /healthz` and `GET /readyz` (no token; docs/http-api.md, "Observability"). */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { ApiProblem } from '../problems.js';
import { ProblemSchema } from '../schemas.js';

const Status = z.object({ status: z.literal('ok') });

/** Register the health routes. */
export async function healthRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  const api = app.withTypeProvider<ZodTypeProvider>();
  api.get('/healthz', {
    config: { open: true },
    schema: { summary: 'The process is up', tags: ['health'], response: { 200: Status } },
    handler: async () => ({ status: 'ok' as const }),
  });
  api.get('/readyz', {
    config: { open: true },
    schema: {
      summary: 'The store answers and the server is not stopping',
      tags: ['health'],
      response: { 200: Status, 503: ProblemSchema },
    },
    handler: async () => {
      if (deps.stopping()) throw new ApiProblem(503, 'shutting_down', 'the server is stopping');
      try {
        deps.store.runs({ limit: 1 });
      } catch (error) {
        deps.log.warn({ err: error }, 'readyz: the store did not answer');
        throw new ApiProblem(503, 'not_ready', 'the store does not answer');
      }
      return { status: 'ok' as const };
    },
  });
}
