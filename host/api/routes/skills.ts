/**
 * `GET /v1/skills` (docs/http-api.md, "Console endpoints"): the token's tenant's skills with the content digest
 * recorded when each was applied and what a run last found changed since (host/state/skillDigests.ts), one indexed
 * query. A read of its own, not fields of `GET /v1/resources`: that one answers as `paddock resources list --json`.
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { skillStatesOfTenant } from '../../state/skillDigests.js';
import { principalOf, requireRole } from '../auth.js';
import type { ApiDeps } from '../deps.js';
import { API_SCHEMAS, AUTH_ERRORS } from '../schemas.js';

const SkillStateSchema = z.object({
  id: z.string(),
  digest: z.string().nullable().describe('The content digest recorded at the last apply; null: never recorded.'),
  name: z.string().nullable().describe('The name the skill gave itself when recorded.'),
  version: z.string().nullable(),
  recordedAt: z.string().nullable(),
  changed: z
    .object({
      digest: z.string().describe('The digest the run found.'),
      at: z.string(),
      runId: z.string(),
    })
    .nullable()
    .describe('The last run that found other content than `digest`, since the skill was applied; null: none did.'),
});
API_SCHEMAS.add(SkillStateSchema, {
  id: 'SkillState',
  description:
    "A skill's recorded content digest and whether a run found its content changed since; applying the skill again " +
    'records its content as it is and clears `changed`.',
});

/** Register `GET /v1/skills` (admin, viewer). */
export function skillsRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.withTypeProvider<ZodTypeProvider>().get('/v1/skills', {
    schema: {
      summary: "The tenant's skills: the digest recorded at apply, and what a run last found changed since",
      tags: ['console'],
      security: [{ bearer: [] }],
      response: { 200: z.object({ skills: z.array(SkillStateSchema) }), ...AUTH_ERRORS },
    },
    preValidation: requireRole('admin', 'viewer'),
    handler: async (request) => ({ skills: skillStatesOfTenant(deps.store, principalOf(request).tenant) }),
  });
}
