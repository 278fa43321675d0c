/** `GET /v1/whoami` (docs/http-api.md, "Console endpoints"): who the request's token is, never its secret. */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { API_ROLES, apiTokenInfo } from '../../state/apiTokens.js';
import { principalOf } from '../auth.js';
import type { ApiDeps } from '../deps.js';
import { ApiProblem } from '../problems.js';
import { API_SCHEMAS, AUTH_ERRORS } from '../schemas.js';

const WhoamiSchema = z.object({
  tokenId: z.string(),
  tenant: z.string(),
  role: z.enum(API_ROLES),
  name: z.string(),
  expiresAt: z.string().nullable(),
});
API_SCHEMAS.add(WhoamiSchema, {
  id: 'Whoami',
  description: "The calling token: its id, tenant, role, name and expiry (null: none). Never the token's secret.",
});

/** Register `GET /v1/whoami` (any valid token). */
export function whoamiRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.withTypeProvider<ZodTypeProvider>().get('/v1/whoami', {
    schema: {
      summary: "The calling token's id, tenant, role, name and expiry (any role)",
      tags: ['console'],
      security: [{ bearer: [] }],
      response: { 200: WhoamiSchema, ...AUTH_ERRORS },
    },
    handler: async (request) => {
      const principal = principalOf(request);
      const token = apiTokenInfo(deps.store, principal.tokenId, principal.tenant);
      // The auth hook verified it an instant ago; gone now only if it was deleted from the store in between.
      if (!token) throw new ApiProblem(404, 'not_found', 'no such token');
      return {
        tokenId: token.id,
        tenant: token.tenant,
        role: token.role,
        name: token.name,
        expiresAt: token.expiresAt,
      };
    },
  });
}
