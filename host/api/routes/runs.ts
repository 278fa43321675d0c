/** `GET /v1/runs/:id` and `POST /v1/runs/:id/cancel` (docs/http-api.md, "Bot-platform endpoints"). */
import { apiActor } from '../actor.js';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { requestCancel } from '../../dispatch/runControls.js';
import type { RunRow, Store } from '../../state/store.js';
import { tenantOfRun } from '../../state/tenancy.js';
import { principalOf, requireRole } from '../auth.js';
import type { ApiDeps } from '../deps.js';
import { ApiProblem } from '../problems.js';
import { AUTH_ERRORS, CancelAnswerSchema, CancelBodySchema, IdParams, ProblemSchema, RunSchema } from '../schemas.js';

/** The run `id` when it belongs to `tenant`; another tenant's run is answered exactly like a missing one. */
export function runOfTenant(store: Store, id: string, tenant: string): RunRow {
  const run = tenantOfRun(store, id) === tenant ? store.run(id) : undefined;
  if (!run) throw new ApiProblem(404, 'not_found', `no run ${id}`);
  return run;
}

/** A run as the API shows it (RunSchema: no host pids). */
export function runView(run: RunRow) {
  return {
    id: run.id,
    sessionId: run.sessionId,
    bindingId: run.bindingId,
    runner: run.runnerId,
    status: run.status,
    reason: run.reason,
    queuedAt: run.queuedAt,
    startedAt: run.startedAt,
    endedAt: run.endedAt,
    usage: (run.usage ?? null) as never,
  };
}

/** Register the run routes. */
export async function runsRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  const api = app.withTypeProvider<ZodTypeProvider>();
  api.get('/v1/runs/:id', {
    schema: {
      summary: 'A run: status, binding, session, outcome, times',
      tags: ['platform'],
      security: [{ bearer: [] }],
      params: IdParams,
      response: { 200: RunSchema, 400: ProblemSchema, ...AUTH_ERRORS },
    },
    preValidation: requireRole('platform', 'approver', 'admin', 'viewer'),
    handler: async (request) => {
      return runView(runOfTenant(deps.store, request.params.id, principalOf(request).tenant));
    },
  });

  api.post('/v1/runs/:id/cancel', {
    schema: {
      summary: 'Ask the process holding a queued or running run to cancel it',
      tags: ['platform'],
      security: [{ bearer: [] }],
      params: IdParams,
      body: CancelBodySchema,
      response: { 202: CancelAnswerSchema, 400: ProblemSchema, ...AUTH_ERRORS, 409: ProblemSchema },
    },
    preValidation: requireRole('platform', 'admin'),
    handler: async (request, reply) => {
      const principal = principalOf(request);
      const run = runOfTenant(deps.store, request.params.id, principal.tenant);
      if (run.status !== 'queued' && run.status !== 'running')
        throw new ApiProblem(409, 'conflict', `run ${run.id} already ended ${run.status}; nothing to cancel`, {
          runStatus: run.status,
        });
      // Through run_controls, like `paddock runs cancel` (audited): whichever process holds the run acts on it.
      // This process's watcher never sees its own connection's commits (the store's commit signal), so a run held here
      // is cancelled directly too.
      const by = apiActor(principal);
      const reason = request.body?.reason ?? 'cancelled through the API';
      requestCancel(deps.store, [run.id], reason, by);
      deps.dispatcher.cancel(run.id, `${reason} (by ${by})`, { requested: true });
      return reply.code(202).send({ runId: run.id, requested: true as const });
    },
  });
}
