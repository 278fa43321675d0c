/**
 * `GET /v1/spend` (docs/http-api.md, "Console endpoints"): the token's tenant's model spend of the last 24 h — per
 * model, and per binding with its day budgets (host/admin/spend.ts; each read one indexed query: host/state/spend.ts).
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { spendOfTenant } from '../../admin/spend.js';
import { principalOf, requireRole } from '../auth.js';
import type { ApiDeps } from '../deps.js';
import { API_SCHEMAS, AUTH_ERRORS } from '../schemas.js';

const SpendSchema = z.object({
  tenant: z.string(),
  at: z.string().describe('When the figures were read.'),
  since: z.string().describe('The start of the window (24 h before `at`): the window of the per-day budgets.'),
  models: z
    .array(
      z.object({
        model: z.string().describe('The model resource id.'),
        calls: z.int().describe('Calls metered in the window, refused and failed ones included.'),
        failedCalls: z.int().describe('Calls answered with an error status (HTTP 400 or more).'),
        inputTokens: z.int(),
        outputTokens: z.int(),
        costUsd: z.number().describe('Priced models only; 0 otherwise.'),
      }),
    )
    .describe('The models the tenant called in the window, by id.'),
  bindings: z
    .array(
      z.object({
        binding: z.string(),
        stored: z.boolean().describe('False: a binding no longer stored whose calls are still in the window.'),
        calls: z.int(),
        tokens: z.int().describe('Settled input + output tokens of the calls in the window.'),
        costUsd: z.number(),
        reserved: z
          .object({ calls: z.int(), tokens: z.int(), costUsd: z.number() })
          .describe('What calls in flight hold now (their worst case), counted against the budgets with the rest.'),
        budget: z
          .object({ tokensPerDay: z.number().nullable(), costPerDayUsd: z.number().nullable() })
          .describe("The binding's `limits.modelTokensPerDay` and `limits.modelCostPerDayUsd`; null: not set."),
      }),
    )
    .describe("Every stored binding of the tenant, and any other binding id with calls of the tenant's sessions."),
});
API_SCHEMAS.add(SpendSchema, {
  id: 'Spend',
  description:
    "A tenant's model spend of the last 24 h (the per-day budgets' window), of its own sessions' calls only: per " +
    'model, and per binding with what calls in flight reserve and its day budgets.',
});

/** Register `GET /v1/spend` (admin, viewer). */
export function spendRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.withTypeProvider<ZodTypeProvider>().get('/v1/spend', {
    schema: {
      summary: "The tenant's model calls, tokens and cost of the last 24 h, per model and per binding with its budgets",
      tags: ['console'],
      security: [{ bearer: [] }],
      response: { 200: SpendSchema, ...AUTH_ERRORS },
    },
    preValidation: requireRole('admin', 'viewer'),
    handler: async (request) => spendOfTenant(deps.store, principalOf(request).tenant),
  });
}
