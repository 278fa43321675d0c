/**
 * `GET /v1/audit/verify` and `GET /v1/audit/export` (docs/http-api.md, "Admin endpoints"): the signed chain's verdict,
 * and the audit records the token's tenant may read, oldest first, as a JSON page or JSON lines.
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { exportAudit } from '../../ops/auditExport.js';
import { verifyAuditFor } from '../../ops/auditVerify.js';
import type { ApiPrincipal } from '../../state/apiTokens.js';
import { apiActor } from '../actor.js';
import { principalOf, requireRole } from '../auth.js';
import { OPERATOR_TENANT } from './metrics.js';
import { takeOrRefuse, TokenBuckets } from '../rateLimit.js';
import type { ApiDeps } from '../deps.js';
import { API_SCHEMAS, AUTH_ERRORS, ProblemSchema } from '../schemas.js';

/**
 * How often the whole chain may be verified: each call reads and checks every record (≈ 470 ms per 20 000 on the
 * shared event loop), so per tenant (all its tokens) and per server, in bursts.
 */
export const VERIFY_RATE = { tenant: { rate: 0.1, burst: 2 }, server: { rate: 0.5, burst: 4 } };

/** Records one export request looks at, at most (its page may hold fewer records; `next` goes on from there). */
export const EXPORT_SCAN = 10_000;

const AuditRecordSchema = z.object({
  seq: z.int(),
  at: z.string(),
  type: z.string(),
  actor: z.string(),
  sessionId: z.string().nullable(),
  runId: z.string().nullable(),
  data: z.unknown(),
  prev: z.string(),
  hash: z.string(),
  tenant: z.string().nullable(),
});
API_SCHEMAS.add(AuditRecordSchema, {
  id: 'AuditRecord',
  description:
    'A stored audit record (every hashed field, `prev` and `hash`) and the tenant it is counted to (null: the ' +
    "host's own; not hashed).",
});

const VerdictSchema = z.object({
  ok: z.boolean(),
  records: z.int(),
  checkpoints: z.int().optional(),
  head: z.string().optional(),
  keyId: z.string().optional(),
  keys: z
    .array(
      z.object({
        keyId: z.string(),
        introducedAt: z.int().nullable(),
        trusted: z.boolean(),
        checkpoints: z.int(),
      }),
    )
    .optional()
    .describe(
      "Every key the verifier knew of: the data folder's (the root of trust) and those the chain introduced " +
        '(`audit.key_created`), each trusted once a checkpoint of a trusted key covers its introduction.',
    ),
  signedUpTo: z
    .int()
    .optional()
    .describe('The highest record a checkpoint of a trusted key covers; later records hold by their hashes only.'),
  problem: z.enum(['edited', 'dropped', 'reordered', 'truncated', 'bad signature', 'malformed']).optional(),
  seq: z.int().optional(),
  detail: z.string().optional(),
  record: AuditRecordSchema.nullable().optional(),
});
API_SCHEMAS.add(VerdictSchema, {
  id: 'AuditVerdict',
  description:
    "The whole chain's verdict; on failure the first bad record's seq, and the record itself only when the " +
    "token's tenant may read it (else null).",
});

const ExportQuery = z
  .strictObject({
    after: z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
    before: z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
    order: z.enum(['asc', 'desc']).default('asc').describe("`desc`: newest first (the console's recent records)."),
    limit: z.coerce.number().int().min(1).max(1000).default(500),
    format: z.enum(['json', 'jsonl']).default('json'),
  })
  .check(
    z.refine((q) => !(q.order !== 'desc' && q.before !== undefined), {
      path: ['before'],
      message: 'goes with order=desc (oldest first pages go on with after)',
      when: () => true,
    }),
    z.refine((q) => !(q.order === 'desc' && q.after !== undefined), {
      path: ['after'],
      message: 'goes with order=asc (newest first pages go on with before)',
      when: () => true,
    }),
  );
const ExportPageSchema = z.object({ records: z.array(AuditRecordSchema), next: z.int(), more: z.boolean() });
API_SCHEMAS.add(ExportPageSchema, {
  id: 'AuditExportPage',
  description:
    "A page of the tenant's audit records, oldest first; `next` is the next page's `after`; `more` is false when " +
    'the log ended within the page.',
});

/**
 * Whether a caller reads the host's own audit records: the operator tenant's admin only (host-wide, like /metrics);
 * a viewer reads its tenant's records, the operator tenant's viewers too.
 */
function readsHostRecords(principal: ApiPrincipal): boolean {
  return principal.role === 'admin' && principal.tenant === OPERATOR_TENANT;
}

/** Register the audit routes (admin, viewer). */
export async function adminAuditRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const perTenant = new TokenBuckets(VERIFY_RATE.tenant);
  const perServer = new TokenBuckets(VERIFY_RATE.server);
  api.get('/v1/audit/verify', {
    schema: {
      summary: 'Verify the whole signed audit chain (paddock audit verify)',
      tags: ['admin'],
      security: [{ bearer: [] }],
      response: { 200: VerdictSchema, ...AUTH_ERRORS },
    },
    preValidation: requireRole('admin', 'viewer'),
    handler: async (request) => {
      const { tenant } = principalOf(request);
      for (const [scope, buckets, key] of [
        ['tenant', perTenant, tenant],
        ['server', perServer, 'server'],
      ] as const)
        takeOrRefuse(
          buckets,
          key,
          `the whole audit chain is verified at most ${VERIFY_RATE[scope].rate * 60} times a minute per ${scope} ` +
            `(bursts of ${VERIFY_RATE[scope].burst})`,
          { scope },
        );
      const principal = principalOf(request);
      return verifyAuditFor(deps.store, tenant, { by: apiActor(principal), hostRecords: readsHostRecords(principal) });
    },
  });

  api.get('/v1/audit/export', {
    schema: {
      summary:
        "The tenant's audit records, oldest first, a page at a time (`format=jsonl`: one record per line, the " +
        'cursor in the paddock-audit-next and paddock-audit-more headers)',
      tags: ['admin'],
      security: [{ bearer: [] }],
      querystring: ExportQuery,
      response: { 200: ExportPageSchema, 400: ProblemSchema, ...AUTH_ERRORS },
    },
    preValidation: requireRole('admin', 'viewer'),
    handler: async (request, reply) => {
      const { after, before, order, limit, format } = request.query;
      const principal = principalOf(request);
      const hostRecords = readsHostRecords(principal);
      const scan = EXPORT_SCAN;
      const page = exportAudit(deps.store, principal.tenant, { after, before, order, limit, scan, hostRecords });
      if (format === 'json') return page;
      // Each record its own line (JSON.stringify escapes every line break inside it).
      const lines = page.records.map((r) => `${JSON.stringify(r)}\n`).join('');
      return reply
        .header('paddock-audit-next', String(page.next))
        .header('paddock-audit-more', String(page.more))
        .type('application/x-ndjson; charset=utf-8')
        .send(lines as never); // a string is sent as is, not through the JSON page's serializer
    },
  });
}
