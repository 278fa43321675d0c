/**
 * `GET /v1/runners`, `GET /v1/config`, `POST /v1/config/apply`, `GET /v1/resources` (docs/http-api.md, "Admin
 * endpoints"): the CLI's `runners list`, `export`, `apply` and `resources list` for the token's tenant, through the
 * same host modules (host/admin/).
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { stringify as toYaml } from 'yaml';
import { applyAs, exportConfig, listResources, validationContext } from '../../admin/config.js';
import { listRunners } from '../../admin/runners.js';
import { hostCatalog } from '../../packages/installedRunners.js';
import { parseYamlIsolated } from '../../bindings/isolatedYaml.js';
import { apiActor } from '../actor.js';
import {
  ApplyAnswerSchema,
  ApplyBodySchema,
  ConfigObjectSchema,
  ConfigQuery,
  ConfigSchema,
  RunnersAnswerSchema,
} from '../adminSchemas.js';
import { principalOf, requireRole } from '../auth.js';
import { takeOrRefuse, TokenBuckets } from '../rateLimit.js';
import { ApiProblem } from '../problems.js';
import { valueDepth } from '../../util/valueDepth.js';
import { configProblemOf } from '../configProblem.js';
import type { ApiDeps } from '../deps.js';
import { AUTH_ERRORS, ProblemSchema } from '../schemas.js';
import { z } from 'zod';

/**
 * How often one tenant may change its configuration (applies, dry runs included; enable; disable): validating a
 * large configuration takes the shared event loop 50–300 ms, so the token rate (20/s, every token of the tenant its
 * own) would let one tenant hold the loop.
 */
export const APPLY_RATE = { rate: 2, burst: 20 };

const changeBuckets = new WeakMap<ApiDeps, TokenBuckets>();

/**
 * Count one configuration change (an apply, dry or not; an enable or disable) against the tenant's rate on this
 * server, or throw 429 `rate_limited` with `scope: 'tenant'`. Each change validates the tenant's configuration.
 */
export function takeConfigChange(deps: ApiDeps, tenant: string): void {
  const { rate, burst } = deps.configChangeRate ?? APPLY_RATE;
  let buckets = changeBuckets.get(deps);
  if (!buckets) changeBuckets.set(deps, (buckets = new TokenBuckets({ rate, burst })));
  takeOrRefuse(
    buckets,
    tenant,
    `this tenant changes its configuration at most ${rate} times a second (bursts of ${burst})`,
    {
      scope: 'tenant',
    },
  );
}

/** How deeply a configuration may nest (a runner's `config` included); the protocol's own JSON limit. */
const MAX_CONFIG_DEPTH = 64;

/** How large a configuration may be as it would be stored (JSON, aliases expanded): the request body's own limit. */
const MAX_CONFIG_BYTES = 1024 * 1024;

/** Register the configuration admin routes. */
export function adminConfigRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const admin = requireRole('admin');
  const reader = requireRole('admin', 'viewer');
  const common = { tags: ['admin'], security: [{ bearer: [] }] };

  api.get('/v1/runners', {
    schema: {
      ...common,
      summary: 'The runners the host found, and the broken ones with their error (as `paddock runners list --json`)',
      response: { 200: RunnersAnswerSchema, ...AUTH_ERRORS },
    },
    preValidation: reader,
    handler: async () => listRunners(hostCatalog(deps.config, deps.store)),
  });

  api.get('/v1/config', {
    schema: {
      ...common,
      summary: "The tenant's stored resources and bindings (as `paddock export`; `?format=yaml` for YAML)",
      querystring: ConfigQuery,
      response: {
        200: {
          content: {
            'application/json': { schema: ConfigSchema },
            'application/yaml': { schema: z.string() },
          },
        },
        400: ProblemSchema,
        ...AUTH_ERRORS,
      },
    },
    preValidation: reader,
    handler: async (request, reply) => {
      const config = exportConfig(deps.store, principalOf(request).tenant);
      if (request.query.format === 'yaml')
        return reply
          .type('application/yaml')
          .serializer((text: unknown) => String(text))
          .send(toYaml(config));
      return reply.type('application/json').send(config);
    },
  });

  api.get('/v1/resources', {
    schema: {
      ...common,
      summary: "The tenant's stored resources with their versions (as `paddock resources list --json`)",
      response: { 200: z.array(ConfigObjectSchema), ...AUTH_ERRORS },
    },
    preValidation: reader,
    handler: async (request) => listResources(deps.store, principalOf(request).tenant) as never,
  });

  api.post('/v1/config/apply', {
    schema: {
      ...common,
      summary:
        "Validate a configuration, then store it for the token's tenant in one audited transaction (paddock apply)",
      body: ApplyBodySchema,
      response: { 200: ApplyAnswerSchema, 400: ProblemSchema, ...AUTH_ERRORS, 413: ProblemSchema },
    },
    preValidation: admin,
    handler: async (request) => {
      const principal = principalOf(request);
      takeConfigChange(deps, principal.tenant);
      const { yaml, config, dryRun, prune, by } = request.body;
      const [prefix, root] = yaml === undefined ? ['config.', 'config'] : ['', 'yaml'];
      try {
        const tooDeep = () =>
          new ApiProblem(400, 'invalid_request', `the configuration nests deeper than ${MAX_CONFIG_DEPTH} levels`, {
            errors: [{ path: root, message: `nests deeper than ${MAX_CONFIG_DEPTH} levels` }],
          });
        const tooLarge = () =>
          new ApiProblem(
            413,
            'payload_too_large',
            `the configuration is larger than ${MAX_CONFIG_BYTES} bytes once its YAML aliases are expanded`,
            { errors: [{ path: root, message: `larger than ${MAX_CONFIG_BYTES} bytes once aliases are expanded` }] },
          );
        // YAML is read in a child process, bounded in time and memory (host/bindings/isolatedYaml.ts): the parser
        // recurses per level, and a hostile text can crash or stall the process that parses it.
        let raw: unknown = config;
        if (yaml !== undefined) {
          const read = await parseYamlIsolated(yaml, {
            depth: MAX_CONFIG_DEPTH,
            bytes: MAX_CONFIG_BYTES,
            owner: principal.tenant,
          });
          if ('problem' in read) {
            if (read.problem === 'too_deep') throw tooDeep();
            if (read.problem === 'too_large') throw tooLarge();
            if (read.problem === 'busy')
              throw new ApiProblem(
                429,
                'server_busy',
                `the server is busy: ${read.message}; retry`,
                {},
                {
                  'retry-after': '1',
                },
              );
            const message =
              read.problem === 'invalid'
                ? read.message
                : read.problem === 'too_slow'
                  ? `the YAML text ${read.message}`
                  : `the YAML text could not be read (${read.message})`;
            throw new ApiProblem(400, 'invalid_request', `the configuration is not valid: yaml: ${message}`, {
              errors: [{ path: root, message }],
            });
          }
          raw = read.value;
        }
        // Deeper than any real configuration, and deep enough to exhaust the recursive walks of copying and
        // validating it: refused up front, naming where it came in. A `config` object is bounded in size by the
        // body; its depth is measured here (the YAML reader measured both for a text: aliases repeat what they name,
        // and a 0.9 MB text stood for 82 MB stored).
        if (yaml === undefined && valueDepth(raw, MAX_CONFIG_DEPTH) > MAX_CONFIG_DEPTH) throw tooDeep();
        return applyAs(deps.store, raw, validationContext(deps.config, deps.redactor, deps.store), {
          by: apiActor(principal, by),
          dryRun,
          prune,
          tenant: principal.tenant,
          hostLevel: deps.hostConfig === true,
        });
      } catch (error) {
        if (error instanceof ApiProblem) throw error;
        throw configProblemOf(error, prefix, root);
      }
    },
  });
}
