/** `GET /metrics` (docs/http-api.md, "Observability"): Prometheus text, for an admin token of the operator tenant. */
import type { FastifyInstance } from 'fastify';
import { principalOf, requireRole } from '../auth.js';
import type { ApiDeps } from '../deps.js';
import { ApiProblem } from '../problems.js';
import { AUTH_ERRORS } from '../schemas.js';

/** The tenant whose admins may read host-wide figures: metrics span every tenant. */
export const OPERATOR_TENANT = 'default';

/** Register `GET /metrics` (answers 404 `not_found` when the server was built without metrics). */
export function metricsRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.get('/metrics', {
    schema: {
      summary: 'Prometheus metrics (runs, queue, gateway, sandbox kills, webhooks, SSE clients, HTTP)',
      tags: ['admin'],
      security: [{ bearer: [] }],
      response: { ...AUTH_ERRORS },
    },
    preValidation: requireRole('admin'),
    handler: async (request, reply) => {
      const { tenant } = principalOf(request);
      // Another tenant's admin: the same answer as a server without metrics (nothing of other tenants leaks).
      if (tenant !== OPERATOR_TENANT || !deps.metrics) throw new ApiProblem(404, 'not_found', 'no route GET /metrics');
      return reply.header('content-type', deps.metrics.contentType).send(await deps.metrics.render());
    },
  });
}
