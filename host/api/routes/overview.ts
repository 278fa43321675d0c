/**
 * `GET /v1/overview` (docs/http-api.md, "Console endpoints"): a tenant's dashboard figures, each one indexed query
 * (host/state/overview.ts), and the last recorded verification of the audit chain (never a walk of the chain).
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { latestAuditVerification } from '../../state/auditVerifications.js';
import { tenantOverview } from '../../state/overview.js';
import { principalOf, requireRole } from '../auth.js';
import type { ApiDeps } from '../deps.js';
import { API_SCHEMAS, AUTH_ERRORS } from '../schemas.js';

const OverviewSchema = z.object({
  tenant: z.string(),
  at: z.string().describe('When the figures were read.'),
  runs: z.object({
    last24h: z.object({
      since: z.string().describe('The start of the window (24 h before `at`).'),
      byOutcome: z.record(z.string(), z.int()).describe('Runs that ended in the window, by final status.'),
      total: z.int(),
    }),
    running: z.int(),
    queued: z.int(),
  }),
  approvals: z.object({ pending: z.int().describe('Approvals waiting for a person, not past their expiry.') }),
  auditVerification: z
    .object({
      at: z.string(),
      ok: z.boolean(),
      records: z.int().describe('Records checked (on failure, up to the first bad one).'),
      firstBad: z.object({ seq: z.int(), problem: z.string() }).nullable(),
      via: z.enum(['cli', 'api']),
    })
    .nullable()
    .describe('The last verification of the whole chain (CLI or API), as recorded; null when never verified.'),
});
API_SCHEMAS.add(OverviewSchema, {
  id: 'Overview',
  description:
    "A tenant's dashboard: runs ended in the last 24 h by outcome, running and queued runs, pending approvals, and " +
    "the last recorded verification of the audit chain (the host's one chain: every tenant sees the same).",
});

/** Register `GET /v1/overview` (viewer, approver, admin). */
export function overviewRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.withTypeProvider<ZodTypeProvider>().get('/v1/overview', {
    schema: {
      summary:
        "The tenant's dashboard figures (runs by outcome in 24 h, running, queued, pending approvals, last verify)",
      tags: ['console'],
      security: [{ bearer: [] }],
      response: { 200: OverviewSchema, ...AUTH_ERRORS },
    },
    preValidation: requireRole('viewer', 'approver', 'admin'),
    handler: async (request) => {
      const { tenant } = principalOf(request);
      const now = new Date();
      const counts = tenantOverview(deps.store, tenant, now);
      return {
        tenant,
        at: now.toISOString(),
        runs: { last24h: counts.ended, running: counts.running, queued: counts.queued },
        approvals: { pending: counts.pendingApprovals },
        auditVerification: latestAuditVerification(deps.store),
      };
    },
  });
}
