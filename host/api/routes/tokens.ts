/**
 * `GET /v1/tokens`, `POST /v1/tokens`, `POST /v1/tokens/:id/revoke` (docs/http-api.md, "Console endpoints"): a
 * tenant's admin manages its own tenant's tokens through the store's functions the CLI uses (host/state/apiTokens.ts),
 * audited with actor `token:<the caller's id>`. Another tenant's token is answered exactly like a missing one.
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { API_ROLES, createApiToken, listApiTokens, revokeApiToken } from '../../state/apiTokens.js';
import { EXPIRY_DURATION, expiryAfter, expiryInstant } from '../../util/expiry.js';
import { principalOf, requireRole } from '../auth.js';
import type { ApiDeps } from '../deps.js';
import { ApiProblem } from '../problems.js';
import { API_SCHEMAS, AUTH_ERRORS, ProblemSchema } from '../schemas.js';

const TokenInfoSchema = z.object({
  id: z.string(),
  tenant: z.string(),
  role: z.enum(API_ROLES),
  name: z.string(),
  createdAt: z.string(),
  createdBy: z.string(),
  expiresAt: z.string().nullable(),
  revokedAt: z.string().nullable(),
  revokedBy: z.string().nullable(),
  lastUsedAt: z.string().nullable().describe('When it was last used, to within a minute.'),
});
API_SCHEMAS.add(TokenInfoSchema, {
  id: 'ApiToken',
  description: 'An API token as listed: never its secret nor a hash of it.',
});

/** Why an expiry text is refused (the CLI's `--expires` words). */
const EXPIRY_WORDS = 'a duration from now (30d, 12h, 90m; at most 99999 units)';

/** The expiry members of a body that may be anything (the checks run even when its shape is wrong). */
function fieldsOf(body: unknown): { expiresIn?: unknown; expiresAt?: unknown } {
  return typeof body === 'object' && body !== null ? body : {};
}
const atOf = (body: unknown) => {
  const at = fieldsOf(body).expiresAt;
  return typeof at === 'string' ? expiryInstant(at) : undefined;
};

const CreateTokenBody = z
  .strictObject({
    role: z.enum(API_ROLES),
    name: z.string().max(200).optional(),
    expiresIn: z.string().regex(EXPIRY_DURATION, `must be ${EXPIRY_WORDS}`).optional(),
    expiresAt: z.string().optional().describe('An ISO 8601 date-time with its zone, in the future.'),
  })
  // Each check runs whatever else is wrong with the body (`when`), so one answer names every bad field.
  .check(
    z.refine((body) => typeof fieldsOf(body).expiresAt !== 'string' || atOf(body) !== undefined, {
      path: ['expiresAt'],
      message: 'must be an ISO 8601 date-time with its zone (Z or ±hh:mm)',
      when: () => true,
    }),
    z.refine((body) => (atOf(body)?.getTime() ?? Infinity) > Date.now(), {
      path: ['expiresAt'],
      message: 'must be in the future',
      when: () => true,
    }),
    z.refine((body) => fieldsOf(body).expiresIn === undefined || fieldsOf(body).expiresAt === undefined, {
      path: ['expiresAt'],
      message: 'give expiresIn or expiresAt, not both',
      when: () => true,
    }),
  );

const CreatedSchema = TokenInfoSchema.extend({
  token: z.string().describe('The token itself (pdk_…): shown this once, never again.'),
});

const TokenIdParams = z.object({ id: z.string().max(64) });

/** Register the token routes (admin of the token's own tenant). */
export function tokensRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const admin = requireRole('admin');
  const common = { tags: ['admin'], security: [{ bearer: [] }] };

  api.get('/v1/tokens', {
    schema: {
      ...common,
      summary: "The tenant's tokens, newest first (no secrets; as `paddock tokens list --tenant`)",
      response: { 200: z.object({ tokens: z.array(TokenInfoSchema) }), ...AUTH_ERRORS },
    },
    preValidation: admin,
    handler: async (request) => ({ tokens: listApiTokens(deps.store, { tenant: principalOf(request).tenant }) }),
  });

  api.post('/v1/tokens', {
    schema: {
      ...common,
      summary: 'Create a token of the tenant (audited); the answer holds the token, shown this once',
      body: CreateTokenBody,
      response: { 201: CreatedSchema, 400: ProblemSchema, ...AUTH_ERRORS },
    },
    preValidation: admin,
    handler: async (request, reply) => {
      const principal = principalOf(request);
      const { role, name, expiresIn, expiresAt } = request.body;
      const expiry = expiresIn !== undefined ? expiryAfter(expiresIn) : expiresAt && expiryInstant(expiresAt);
      const created = createApiToken(deps.store, {
        tenant: principal.tenant,
        role,
        name,
        expiresAt: expiry || undefined,
        by: `token:${principal.tokenId}`,
      });
      return reply.code(201).send({ ...created.info, token: created.token });
    },
  });

  api.post('/v1/tokens/:id/revoke', {
    schema: {
      ...common,
      summary:
        'Revoke a token of the tenant (audited; refused from the next request on, by every server on the data ' +
        'folder; revoking the calling token is allowed)',
      params: TokenIdParams,
      response: { 200: TokenInfoSchema, 400: ProblemSchema, ...AUTH_ERRORS },
    },
    preValidation: admin,
    handler: async (request) => {
      const principal = principalOf(request);
      const { id } = request.params;
      const revoked = revokeApiToken(deps.store, id, `token:${principal.tokenId}`, new Date(), {
        tenant: principal.tenant,
      });
      if (!revoked) throw new ApiProblem(404, 'not_found', `no token ${id}`);
      return revoked;
    },
  });
}
