/**
 * Authentication and authorization of `paddock serve` (docs/http-api.md, "Tokens, tenants, roles"): the bearer
 * token verified against the store on every request (a revocation by any process counts from the next request),
 * the per-token rate, and role checks per route.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { verifyApiToken, type ApiPrincipal, type ApiRole, type ApiTokenRefusal } from '../state/apiTokens.js';
import type { Store } from '../state/store.js';
import { ApiProblem } from './problems.js';
import { takeOrRefuse, TokenBuckets, type RateLimitOptions } from './rateLimit.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who the request's token acts as; set by the auth hook on every route that is not open. */
    principal?: ApiPrincipal;
  }
  interface FastifyContextConfig {
    /** A route anyone may call without a token (`/healthz`, `/readyz`, `/openapi.json` only). */
    open?: boolean;
  }
}

/** What each refusal tells the client (never the token itself). */
const REFUSAL_DETAIL: Record<ApiTokenRefusal, string> = {
  missing: 'missing: send Authorization: Bearer <token>',
  malformed: 'invalid: the Authorization header is not a paddock bearer token',
  unknown: 'invalid: no such token',
  expired: 'expired: the token has expired',
  revoked: 'revoked: the token has been revoked',
};

/** The 401 of a refused token. */
export function unauthorized(refusal: ApiTokenRefusal): ApiProblem {
  const reason = refusal === 'malformed' || refusal === 'unknown' ? 'invalid' : refusal;
  return new ApiProblem(401, 'unauthorized', REFUSAL_DETAIL[refusal], { reason }, { 'www-authenticate': 'Bearer' });
}

/** The token of an `Authorization` header value: the bearer credential, or why there is none. */
export function bearerOf(
  header: string | string[] | undefined,
): { token: string } | { refusal: 'missing' | 'malformed' } {
  if (header === undefined || header === '') return { refusal: 'missing' };
  if (Array.isArray(header)) return { refusal: 'malformed' };
  const m = /^Bearer +([^\s]+) *$/i.exec(header);
  return m ? { token: m[1]! } : { refusal: 'malformed' };
}

/**
 * Install the auth hook: every route not marked `config.open` (unknown routes included) needs a valid token, then
 * a request within the token's rate. Sets `request.principal`. `deps.store` is read per request.
 */
export function installAuth(app: FastifyInstance, deps: { readonly store: Store }, rate: RateLimitOptions): void {
  const buckets = new TokenBuckets(rate);
  app.decorateRequest('principal', undefined);
  app.addHook('onRequest', async (request: FastifyRequest) => {
    if (request.routeOptions.config?.open === true) return;
    const bearer = bearerOf(request.headers.authorization);
    if ('refusal' in bearer) throw unauthorized(bearer.refusal);
    const verdict = verifyApiToken(deps.store, bearer.token);
    if (!verdict.ok) throw unauthorized(verdict.refusal);
    request.principal = verdict.principal;
    takeOrRefuse(buckets, verdict.principal.tokenId, 'this token is over its request rate');
  });
}

/** A preHandler admitting only tokens of `roles` (403 `forbidden` naming the role needed and the token's). */
export function requireRole(...roles: ApiRole[]) {
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    const principal = request.principal;
    if (!principal) throw new Error('requireRole on a route without the auth hook'); // a wiring bug: a 500
    if (!roles.includes(principal.role))
      throw new ApiProblem(
        403,
        'forbidden',
        `a ${principal.role} token may not call this endpoint (it needs ${roles.join(' or ')})`,
        { requiredRole: roles, role: principal.role },
      );
  };
}

/** The principal of an authenticated request (routes behind the auth hook only). */
export function principalOf(request: FastifyRequest): ApiPrincipal {
  if (!request.principal) throw new Error('no principal: the route is not behind the auth hook');
  return request.principal;
}
