/**
 * The admin endpoints over a tenant's runs and sessions (docs/http-api.md, "Admin endpoints"): `GET /v1/runs`,
 * `GET /v1/sessions` (keyset pages, newest first) and `POST /v1/runs/:id/resolve` (`paddock runs resolve`).
 */
import { apiActor } from '../actor.js';
import { BySchema } from '../adminSchemas.js';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { resolveRun } from '../../recovery/reconcile.js';
import { runsPage, sessionsPage, type PageKey } from '../../state/adminLists.js';
import { principalOf, requireRole } from '../auth.js';
import type { ApiDeps } from '../deps.js';
import { ApiProblem } from '../problems.js';
import { API_SCHEMAS, AUTH_ERRORS, IdParams, ProblemSchema, RunSchema } from '../schemas.js';
import { runOfTenant, runView } from './runs.js';

/** A page cursor: where the previous page ended, opaque to clients (base64url of JSON). */
export function encodeCursor(key: PageKey | number): string {
  return Buffer.from(JSON.stringify(typeof key === 'number' ? [key] : [key.at, key.id])).toString('base64url');
}

/** What a cursor holds: a run page's position, or a session page's (time, id); else a 400 naming `query.before`. */
function decodeCursor(cursor: string): unknown[] | undefined {
  try {
    const key = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    return Array.isArray(key) ? key : undefined;
  } catch {
    return undefined;
  }
}

const badCursor = () =>
  new ApiProblem(400, 'invalid_request', 'the page cursor is not one this server gave', {
    errors: [{ path: 'query.before', message: "not a cursor: pass a previous page's next" }],
  });

/** The run position of a runs cursor. */
export function runCursor(cursor: string): number {
  const key = decodeCursor(cursor);
  if (key?.length !== 1 || !Number.isSafeInteger(key[0]) || (key[0] as number) < 1) throw badCursor();
  return key[0] as number;
}

/** The (time, id) of a sessions cursor. */
export function sessionCursor(cursor: string): PageKey {
  const key = decodeCursor(cursor);
  if (key?.length !== 2 || !key.every((k) => typeof k === 'string' && k.length <= 256)) throw badCursor();
  return { at: key[0] as string, id: key[1] as string };
}

const Limit = z.coerce.number().int().min(1).max(200).default(50);
const Cursor = z.string().min(1).max(1024);

/** `GET /v1/runs`'s query. */
const RunsQuery = z.strictObject({
  status: z
    .string()
    .regex(/^[a-z_]+(,[a-z_]+)*$/, 'a comma-separated list of run statuses (queued,running,failed,…)')
    .optional(),
  binding: z.string().min(1).max(256).optional(),
  session: z.string().min(1).max(256).optional(),
  limit: Limit,
  before: Cursor.optional(),
});

const RunPageSchema = z.object({ runs: z.array(RunSchema), next: z.string().nullable() });
API_SCHEMAS.add(RunPageSchema, {
  id: 'RunPage',
  description: "A page of the tenant's runs, newest first; `next` (null on the last page) is the next page's `before`.",
});

const SessionRowSchema = z.object({
  id: z.string(),
  bindingId: z.string(),
  conversationKey: z.string(),
  createdAt: z.string(),
  lastActivityAt: z.string(),
  paused: z.object({ reason: z.string() }).nullable(),
  runs: z.int(),
});
const SessionPageSchema = z.object({ sessions: z.array(SessionRowSchema), next: z.string().nullable() });
API_SCHEMAS.add(SessionPageSchema, {
  id: 'SessionPage',
  description:
    "A page of the tenant's sessions, newest activity first; `next` (null on the last page) is the next page's " +
    '`before`.',
});

const ResolveBody = z.strictObject({
  as: z.enum(['succeeded', 'failed']),
  by: BySchema,
});
const ResolveAnswer = z.object({
  runId: z.string(),
  as: z.enum(['succeeded', 'failed']),
  resolved: z.array(z.string()),
  resumed: z.boolean(),
});

/** Register `GET /v1/runs`, `GET /v1/sessions` and `POST /v1/runs/:id/resolve` (admin). */
export async function adminRunsRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  const api = app.withTypeProvider<ZodTypeProvider>();
  api.get('/v1/runs', {
    schema: {
      summary: "The tenant's runs, newest first, by status, binding and session, a page at a time",
      tags: ['admin'],
      security: [{ bearer: [] }],
      querystring: RunsQuery,
      response: { 200: RunPageSchema, 400: ProblemSchema, ...AUTH_ERRORS },
    },
    preValidation: requireRole('admin', 'viewer'),
    handler: async (request) => {
      const q = request.query;
      const runs = runsPage(deps.store, principalOf(request).tenant, {
        status: q.status?.split(','),
        bindingId: q.binding,
        sessionId: q.session,
        before: q.before === undefined ? undefined : runCursor(q.before),
        limit: q.limit,
      });
      const last = runs.at(-1);
      return {
        runs: runs.map(runView),
        next: runs.length === q.limit && last ? encodeCursor(last.position) : null,
      };
    },
  });

  api.get('/v1/sessions', {
    schema: {
      summary: "The tenant's sessions, newest activity first, optionally of one binding, a page at a time",
      tags: ['admin'],
      security: [{ bearer: [] }],
      querystring: z.strictObject({
        binding: z.string().min(1).max(256).optional(),
        limit: Limit,
        before: Cursor.optional(),
      }),
      response: { 200: SessionPageSchema, 400: ProblemSchema, ...AUTH_ERRORS },
    },
    preValidation: requireRole('admin', 'viewer'),
    handler: async (request) => {
      const q = request.query;
      const rows = sessionsPage(deps.store, principalOf(request).tenant, {
        bindingId: q.binding,
        before: q.before === undefined ? undefined : sessionCursor(q.before),
        limit: q.limit,
      });
      const last = rows.at(-1);
      return {
        sessions: rows.map(({ pausedReason, ...row }) => ({
          ...row,
          paused: pausedReason === null ? null : { reason: pausedReason },
        })),
        next: rows.length === q.limit && last ? encodeCursor({ at: last.lastActivityAt, id: last.id }) : null,
      };
    },
  });

  api.post('/v1/runs/:id/resolve', {
    schema: {
      summary: 'Decide the open host-side effects of an interrupted run (the session resumes when none is left)',
      tags: ['admin'],
      security: [{ bearer: [] }],
      params: IdParams,
      body: ResolveBody,
      response: { 200: ResolveAnswer, 400: ProblemSchema, ...AUTH_ERRORS, 409: ProblemSchema },
    },
    preValidation: requireRole('admin'),
    handler: async (request) => {
      const principal = principalOf(request);
      const run = runOfTenant(deps.store, request.params.id, principal.tenant);
      const { as, by } = request.body;
      const actor = apiActor(principal, by);
      const result = resolveRun(deps.store, run.id, as, by ?? actor, actor);
      if (result.resolved.length === 0 && !result.resumed)
        throw new ApiProblem(409, 'conflict', `run ${run.id} has no open effect to resolve`, {
          runStatus: run.status,
        });
      return { runId: run.id, as, ...result };
    },
  });
}
