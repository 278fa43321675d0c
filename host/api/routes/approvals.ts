/**
 * The approver's endpoints (docs/http-api.md, "Approver endpoints"; docs/approvals.md §3–§4): a tenant's approvals
 * listed and decided, its capability grants listed and revoked. Roles approver and admin; a token sees and decides
 * only its tenant's approvals and grants (another tenant's ids are 404 like unknown ones). The decisions are the
 * store's (host/state/approvals.ts): atomic, audited with `apiActor`, never wider than asked.
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { EFFECTS } from '../../policy/actions.js';
import {
  APPROVAL_STATUSES,
  approvalById,
  decideApproval,
  decideApprovalGroup,
  listApprovals,
  MAX_REASON_CHARS,
  type ApprovalRow,
  type DecideResult,
} from '../../state/approvals.js';
import {
  GRANT_LIFETIMES,
  listCapabilityGrants,
  revokeCapabilityGrant,
  type CapabilityGrantRow,
} from '../../state/capabilityGrants.js';
import { apiActor } from '../actor.js';
import { BySchema } from '../adminSchemas.js';
import { principalOf, requireRole } from '../auth.js';
import type { ApiDeps } from '../deps.js';
import { ApiProblem } from '../problems.js';
import { API_SCHEMAS, AUTH_ERRORS, IdParams, ProblemSchema } from '../schemas.js';

const Lifetime = z.enum(GRANT_LIFETIMES as [string, ...string[]]);
const ScopeSchema = z.object({ kind: z.enum(['path', 'domain', 'command', 'tool']), value: z.string() });

const ApprovalSchema = z.object({
  id: z.string(),
  runId: z.string(),
  sessionId: z.string(),
  bindingId: z.string(),
  via: z.string(),
  effect: z.enum(EFFECTS),
  target: ScopeSchema,
  summary: z.string().describe("The runner's own words (untrusted: show them as text, never interpret them)."),
  dataClass: z.string().nullable(),
  destination: z.string().nullable(),
  risk: z.object({ score: z.int(), level: z.enum(['low', 'medium', 'high']), reasons: z.array(z.string()) }),
  goalRevision: z.int(),
  groupId: z.string().nullable(),
  requestedLifetime: Lifetime,
  status: z.enum(APPROVAL_STATUSES),
  createdAt: z.string(),
  expiresAt: z.string(),
  decidedAt: z.string().nullable(),
  decidedBy: z.string().nullable(),
  reason: z.string().nullable(),
  grantId: z.string().nullable(),
});
API_SCHEMAS.add(ApprovalSchema, {
  id: 'Approval',
  description: 'An action a run asked for that waits for (or got) a decision (docs/approvals.md §4).',
});

const GrantSchema = z.object({
  id: z.string(),
  capability: z.enum(EFFECTS),
  scope: ScopeSchema,
  lifetime: Lifetime,
  bindingId: z.string(),
  sessionId: z.string().nullable(),
  runId: z.string().nullable(),
  grantor: z.string(),
  approvalId: z.string().nullable(),
  createdAt: z.string(),
  expiresAt: z.string().nullable(),
  revokedAt: z.string().nullable(),
  revokedBy: z.string().nullable(),
  usedAt: z.string().nullable(),
});
API_SCHEMAS.add(GrantSchema, {
  id: 'CapabilityGrant',
  description: 'What an approval with a lasting lifetime left behind: exactly its effect and target (§3).',
});

const ApprovalPageSchema = z.object({ approvals: z.array(ApprovalSchema), next: z.string().nullable() });
API_SCHEMAS.add(ApprovalPageSchema, {
  id: 'ApprovalPage',
  description: "A page of the tenant's approvals, oldest first; `next` (null on the last page) is the next `after`.",
});
const GrantPageSchema = z.object({ grants: z.array(GrantSchema), next: z.string().nullable() });
API_SCHEMAS.add(GrantPageSchema, {
  id: 'CapabilityGrantPage',
  description: "A page of the tenant's capability grants, oldest first; `next` is the next page's `after`.",
});

const Limit = z.coerce.number().int().min(1).max(200).default(50);
const After = z.string().min(1).max(256);
const Reason = z.string().max(MAX_REASON_CHARS);

const ApprovalsQuery = z.strictObject({
  status: z.enum(APPROVAL_STATUSES).optional(),
  runId: z.string().min(1).max(256).optional(),
  limit: Limit,
  after: After.optional(),
  order: z.enum(['asc', 'desc']).default('asc').describe("`desc`: newest first (the console's history)"),
});
const GrantsQuery = z.strictObject({
  binding: z.string().min(1).max(256).optional(),
  all: z.enum(['true', 'false']).optional().describe('also revoked, expired and used grants (default: live only)'),
  limit: Limit,
  after: After.optional(),
});
const Group = z.boolean().describe("also every other pending approval of its group (one run's low-risk asks)");
const ApproveBody = z.strictObject({
  lifetime: Lifetime.optional().describe('default once: this action only, no grant; never longer than requested'),
  reason: Reason.optional(),
  group: Group.optional(),
  by: BySchema,
});
const DenyBody = z.strictObject({ reason: Reason.optional(), group: Group.optional(), by: BySchema });
const DecisionAnswer = z.object({
  approval: ApprovalSchema,
  grant: GrantSchema.nullable(),
  others: z.array(ApprovalSchema).describe('the rest of its group decided with it (`group: true`)'),
});

/** An approval as the API shows it (its tenant is the token's: not repeated). */
function approvalView({ tenant: _tenant, ...row }: ApprovalRow): z.infer<typeof ApprovalSchema> {
  return row;
}

/** A grant as the API shows it: every field present, null when unset. */
function grantView(g: CapabilityGrantRow): z.infer<typeof GrantSchema> {
  return {
    id: g.id,
    capability: g.capability,
    scope: g.scope,
    lifetime: g.lifetime,
    bindingId: g.bindingId,
    sessionId: g.sessionId ?? null,
    runId: g.runId ?? null,
    grantor: g.grantor,
    approvalId: g.approvalId ?? null,
    createdAt: g.createdAt,
    expiresAt: g.expiresAt ?? null,
    revokedAt: g.revokedAt ?? null,
    revokedBy: g.revokedBy ?? null,
    usedAt: g.usedAt ?? null,
  };
}

/** The 400 of an `after` this token's filter does not see (unknown, or another tenant's). */
const badAfter = (what: string) =>
  new ApiProblem(400, 'invalid_request', `the page cursor is not one of this tenant's ${what}`, {
    errors: [{ path: 'query.after', message: `not a ${what.slice(0, -1)} id of this tenant: pass a previous next` }],
  });

/** A page read that maps a cursor the filter does not see to a 400 naming `query.after`. */
function page<T>(read: () => T[], what: string): T[] {
  try {
    return read();
  } catch (error) {
    if (error instanceof RangeError) throw badAfter(what);
    throw error;
  }
}

/** The answer (or problem) of a decision. */
function decisionAnswer(id: string, result: DecideResult & { others?: ApprovalRow[] }) {
  if (result.ok)
    return {
      approval: approvalView(result.row),
      grant: result.grant ? grantView(result.grant) : null,
      others: (result.others ?? []).map(approvalView),
    };
  if (result.code === 'not_found') throw new ApiProblem(404, 'not_found', `no approval ${id}`);
  const row = result.row;
  if (result.code === 'wider_than_asked')
    throw new ApiProblem(
      409,
      'wider_than_asked',
      `approval ${id} asked for a grant of at most ${row.requestedLifetime}; a longer lifetime is not given`,
      { requestedLifetime: row.requestedLifetime },
    );
  throw new ApiProblem(
    409,
    'approval_not_pending',
    result.code === 'expired'
      ? `approval ${id} expired at ${row.expiresAt}, before this decision`
      : result.code === 'run_ended'
        ? `approval ${id} belongs to a run that is over: now void`
        : result.code === 'superseded'
          ? `approval ${id} was asked under an older goal (a newer message superseded it): now void`
          : `approval ${id} is ${row.status}, not pending`,
    { status: row.status, decidedBy: row.decidedBy, decidedAt: row.decidedAt },
  );
}

const TAGS = ['approvals'];
const SECURITY = [{ bearer: [] }];

/** Register the approvals and capability grants endpoints (approver, admin; viewer: the reads). */
export function approvalsRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const approver = requireRole('approver', 'admin');
  const reader = requireRole('approver', 'admin', 'viewer');

  api.get('/v1/approvals', {
    schema: {
      summary: "The tenant's approvals, oldest first (or newest, `order=desc`), by status and run, a page at a time",
      tags: TAGS,
      security: SECURITY,
      querystring: ApprovalsQuery,
      response: { 200: ApprovalPageSchema, 400: ProblemSchema, ...AUTH_ERRORS },
    },
    preValidation: reader,
    handler: async (request) => {
      const q = request.query;
      const tenant = principalOf(request).tenant;
      const rows = page(
        () =>
          listApprovals(deps.store, {
            tenant,
            status: q.status,
            runId: q.runId,
            limit: q.limit,
            after: q.after,
            order: q.order,
          }),
        'approvals',
      );
      return { approvals: rows.map(approvalView), next: rows.length === q.limit ? rows.at(-1)!.id : null };
    },
  });

  api.get('/v1/approvals/:id', {
    schema: {
      summary: 'One approval of the tenant',
      tags: TAGS,
      security: SECURITY,
      params: IdParams,
      response: { 200: ApprovalSchema, ...AUTH_ERRORS },
    },
    preValidation: reader,
    handler: async (request) => {
      const row = approvalById(deps.store, request.params.id, principalOf(request).tenant);
      if (!row) throw new ApiProblem(404, 'not_found', `no approval ${request.params.id}`);
      // On a shared store another host wrote it, redacted with its secrets only (Store.readRedacted).
      return approvalView(deps.store.readRedacted(row));
    },
  });

  api.post('/v1/approvals/:id/approve', {
    schema: {
      summary:
        'Approve a pending approval; with a lifetime run|session|binding it leaves a grant of exactly its target',
      tags: TAGS,
      security: SECURITY,
      params: IdParams,
      body: ApproveBody.nullish(),
      response: { 200: DecisionAnswer, 400: ProblemSchema, ...AUTH_ERRORS, 409: ProblemSchema },
    },
    preValidation: approver,
    handler: async (request) => {
      const principal = principalOf(request);
      const { lifetime, reason, group, by } = request.body ?? {};
      const result = (group ? decideApprovalGroup : decideApproval)(deps.store, request.params.id, {
        outcome: 'approved',
        by: apiActor(principal, by),
        at: new Date().toISOString(),
        tenant: principal.tenant,
        ...(lifetime !== undefined ? { lifetime: lifetime as (typeof GRANT_LIFETIMES)[number] } : {}),
        ...(reason !== undefined ? { reason } : {}),
      });
      return decisionAnswer(request.params.id, deps.store.readRedacted(result));
    },
  });

  api.post('/v1/approvals/:id/deny', {
    schema: {
      summary: 'Deny a pending approval',
      tags: TAGS,
      security: SECURITY,
      params: IdParams,
      body: DenyBody.nullish(),
      response: { 200: DecisionAnswer, 400: ProblemSchema, ...AUTH_ERRORS, 409: ProblemSchema },
    },
    preValidation: approver,
    handler: async (request) => {
      const principal = principalOf(request);
      const { reason, group, by } = request.body ?? {};
      const result = (group ? decideApprovalGroup : decideApproval)(deps.store, request.params.id, {
        outcome: 'denied',
        by: apiActor(principal, by),
        at: new Date().toISOString(),
        tenant: principal.tenant,
        ...(reason !== undefined ? { reason } : {}),
      });
      return decisionAnswer(request.params.id, deps.store.readRedacted(result));
    },
  });

  api.get('/v1/grants', {
    schema: {
      summary: "The tenant's capability grants (live ones unless all=true), oldest first, a page at a time",
      tags: TAGS,
      security: SECURITY,
      querystring: GrantsQuery,
      response: { 200: GrantPageSchema, 400: ProblemSchema, ...AUTH_ERRORS },
    },
    preValidation: reader,
    handler: async (request) => {
      const q = request.query;
      const tenant = principalOf(request).tenant;
      const rows = page(
        () =>
          listCapabilityGrants(deps.store, {
            tenant,
            bindingId: q.binding,
            live: q.all !== 'true',
            limit: q.limit,
            after: q.after,
          }),
        'grants',
      );
      return { grants: rows.map(grantView), next: rows.length === q.limit ? rows.at(-1)!.id : null };
    },
  });

  api.post('/v1/grants/:id/revoke', {
    schema: {
      summary: 'Revoke a capability grant: the next action that would have used it asks again',
      tags: TAGS,
      security: SECURITY,
      params: IdParams,
      body: z.strictObject({ by: BySchema }).nullish(),
      response: { 200: GrantSchema, 400: ProblemSchema, ...AUTH_ERRORS, 409: ProblemSchema },
    },
    preValidation: approver,
    handler: async (request) => {
      const principal = principalOf(request);
      const id = request.params.id;
      const result = revokeCapabilityGrant(deps.store, id, {
        by: apiActor(principal, request.body?.by),
        at: new Date().toISOString(),
        tenant: principal.tenant,
      });
      if (result.ok) return grantView(result.grant);
      if (result.code === 'not_found') throw new ApiProblem(404, 'not_found', `no grant ${id}`);
      throw new ApiProblem(409, 'already_revoked', `grant ${id} was already revoked`, {
        revokedAt: result.grant.revokedAt ?? null,
        revokedBy: result.grant.revokedBy ?? null,
      });
    },
  });
}
