/**
 * `GET /v1/bindings`, `GET /v1/bindings/:id`, `POST /v1/bindings/:id/enable|disable`, `GET /v1/bindings/:id/explain`
 * (docs/http-api.md, "Admin endpoints"): the CLI's `bindings list|show|enable|disable` and `explain` for the token's
 * tenant, through the same host modules (host/admin/). Another tenant's binding answers exactly like a missing one.
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { explainStoredBinding, listBindings, setBindingEnabled, showBinding } from '../../admin/bindings.js';
import { validationContext } from '../../admin/config.js';
import { apiActor } from '../actor.js';
import {
  BindingIdParams,
  BindingShowSchema,
  ConfigObjectSchema,
  EnableAnswerSchema,
  EnableBodySchema,
  ExplanationSchema,
} from '../adminSchemas.js';
import { principalOf, requireRole } from '../auth.js';
import { configProblemOf } from '../configProblem.js';
import { takeConfigChange } from './adminConfig.js';
import type { ApiDeps } from '../deps.js';
import { AUTH_ERRORS, ProblemSchema } from '../schemas.js';

/** Register the binding admin routes. */
export function adminBindingsRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const admin = requireRole('admin');
  const reader = requireRole('admin', 'viewer');
  const common = { tags: ['admin'], security: [{ bearer: [] }] };

  api.get('/v1/bindings', {
    schema: {
      ...common,
      summary: "The tenant's bindings with their versions (as `paddock bindings list --json`)",
      response: { 200: z.array(ConfigObjectSchema), ...AUTH_ERRORS },
    },
    preValidation: reader,
    handler: async (request) => listBindings(deps.store, principalOf(request).tenant) as never,
  });

  api.get('/v1/bindings/:id', {
    schema: {
      ...common,
      summary: 'A binding with its recorded changes (as `paddock bindings show --json`)',
      params: BindingIdParams,
      response: { 200: BindingShowSchema, 400: ProblemSchema, ...AUTH_ERRORS },
    },
    preValidation: reader,
    handler: async (request) => showBinding(deps.store, request.params.id, principalOf(request).tenant) as never,
  });

  for (const verb of ['enable', 'disable'] as const) {
    api.post(`/v1/bindings/:id/${verb}`, {
      schema: {
        ...common,
        summary:
          verb === 'enable'
            ? 'Enable a binding (validated with the rest of the configuration; audited)'
            : 'Disable a binding (audited); with cancelActive, ask its active runs to cancel',
        params: BindingIdParams,
        body: EnableBodySchema,
        response: { 200: EnableAnswerSchema, 400: ProblemSchema, ...AUTH_ERRORS },
      },
      preValidation: admin,
      handler: async (request) => {
        const principal = principalOf(request);
        takeConfigChange(deps, principal.tenant);
        const by = apiActor(principal, request.body?.by ?? undefined);
        const done = (() => {
          try {
            return setBindingEnabled(
              deps.store,
              validationContext(deps.config, deps.redactor, deps.store),
              request.params.id,
              verb === 'enable',
              {
                by,
                cancelActive: request.body?.cancelActive ?? false,
                tenant: principal.tenant,
                hostLevel: deps.hostConfig === true,
              },
            );
          } catch (error) {
            throw configProblemOf(error, '', 'id');
          }
        })();
        // run_controls reach whichever process holds a run; this process's watcher never sees its own
        // connection's commits (the store's commit signal), so runs held here are cancelled directly too.
        for (const runId of done.cancelledRunIds)
          deps.dispatcher.cancel(runId, `binding ${done.bindingId} was disabled (by ${by})`, {
            requested: true,
          });
        return done;
      },
    });
  }

  api.get('/v1/bindings/:id/explain', {
    schema: {
      ...common,
      summary: 'What a run of the binding may touch in the worst case (as `paddock explain --json`)',
      params: BindingIdParams,
      response: { 200: ExplanationSchema, 400: ProblemSchema, ...AUTH_ERRORS },
    },
    preValidation: reader,
    handler: async (request) =>
      explainStoredBinding(
        deps.store,
        deps.config,
        validationContext(deps.config, deps.redactor, deps.store),
        request.params.id,
        principalOf(request).tenant,
      ) as never,
  });
}
