/**
 * `paddock serve`'s HTTP server (docs/http-api.md): Fastify 5 with zod route schemas (validated before a handler
 * runs; the source of the OpenAPI document), request ids, request logs through the host's redacting logger,
 * problem+json errors, bearer-token auth with a per-token rate, and the route modules of host/api/routes/.
 */
import { randomUUID } from 'node:crypto';
import fastifySwagger from '@fastify/swagger';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import {
  createJsonSchemaTransform,
  createJsonSchemaTransformObject,
  serializerCompiler,
  validatorCompiler,
} from 'fastify-type-provider-zod';
import { TOKENS } from '../di/tokens.js';
import type { StartedHost } from '../start.js';
import { installAuth } from './auth.js';
import { clientErrorHandler } from './clientErrors.js';
import type { ApiDeps } from './deps.js';
import { ApiProblem, INTERNAL_PROBLEM, problemOf, sendProblem } from './problems.js';
import { RATE_LIMIT_DEFAULTS, type RateLimitOptions } from './rateLimit.js';
import { API_SCHEMAS } from './schemas.js';
import type { ConsoleFiles } from './console/assets.js';
import type { Metrics } from './metrics/metrics.js';
import { consoleRoutes } from './routes/console.js';
import { metricsRoutes } from './routes/metrics.js';
import { adminAuditRoutes } from './routes/adminAudit.js';
import { adminDoctorRoutes } from './routes/adminDoctor.js';
import { adminRunsRoutes } from './routes/adminRuns.js';
import { approvalsRoutes } from './routes/approvals.js';
import { adminBindingsRoutes } from './routes/adminBindings.js';
import { adminConfigRoutes } from './routes/adminConfig.js';
import { eventsRoutes } from './routes/events.js';
import { healthRoutes } from './routes/health.js';
import { openaiRoutes } from './routes/openai.js';
import { runsRoutes } from './routes/runs.js';
import { sessionsRoutes } from './routes/sessions.js';
import { streamsRoutes } from './routes/streams.js';
import { STREAM_QUOTA_DEFAULTS, StreamQuota, type StreamQuotaOptions } from './streams/streamQuota.js';
import { apiTokenActive } from '../state/apiTokens.js';
import { webhooksRoutes } from './routes/webhooks.js';
import { overviewRoutes } from './routes/overview.js';
import { skillsRoutes } from './routes/skills.js';
import { spendRoutes } from './routes/spend.js';
import { tokensRoutes } from './routes/tokens.js';
import { whoamiRoutes } from './routes/whoami.js';

/** Body limit of every request (docs/http-api.md, "Conventions"). */
export const BODY_LIMIT_BYTES = 1024 * 1024;

/** A client's request id is kept when it looks like this; otherwise the server makes one. */
const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** Options of {@link buildServer}. */
export interface ServerOptions {
  /** The per-token request rate (default 20/s, burst 40). */
  rate?: RateLimitOptions;
  /** True once the server is stopping (new requests answer 503 `shutting_down`). Default: never. */
  stopping?: () => boolean;
  /** The metrics `GET /metrics` serves and requests feed (see host/api/metrics). */
  metrics?: Metrics;
  /** Caps on open SSE streams and how often their tokens are re-checked (default 16 per token, 256 in all, 1 s). */
  streams?: Partial<StreamQuotaOptions>;
  /** The `default` tenant's admin may change host-level configuration (`--api-host-config`; see ApiDeps). */
  hostConfig?: boolean;
  /** Serve the admin console at /console (`--console`; docs/console.md): its built files. Default: no console. */
  console?: ConsoleFiles;
}

/** The version the OpenAPI document states (the API's, not the package's). */
export const API_VERSION = '1.0.0';

/** A request's log fields: never its headers (the authorization header stays out of every log line). */
const requestSerializer = (req: FastifyRequest) => ({ id: req.id, method: req.method, url: req.url });

/** Build the server over a started host (see host/start.ts `openHost`). Not listening yet. */
export async function buildServer(host: StartedHost, options: ServerOptions = {}): Promise<FastifyInstance> {
  const { container, store } = host;
  return buildApi(
    {
      store,
      dispatcher: container.resolve(TOKENS.Dispatcher),
      config: container.resolve(TOKENS.HostConfig),
      log: container.resolve(TOKENS.Logger),
      stopping: options.stopping ?? (() => false),
      metrics: options.metrics,
      redactor: container.resolve(TOKENS.Redactor),
      hostConfig: options.hostConfig ?? false,
    },
    options,
  );
}

/**
 * Build the server over `deps` (what {@link buildServer} resolves from a host). Route modules touch `deps` only while
 * answering a request, so the OpenAPI generator builds it with no host at all.
 */
export async function buildApi(deps: ApiDeps, options: ServerOptions = {}): Promise<FastifyInstance> {
  const log = deps.log.child({ component: 'api' }, { serializers: { req: requestSerializer } });
  const app = Fastify({
    loggerInstance: log as unknown as FastifyBaseLogger,
    // What Node's parser refuses (oversized headers, not HTTP) is answered as problem+json with a request id.
    clientErrorHandler: clientErrorHandler(log),
    bodyLimit: BODY_LIMIT_BYTES,
    // Ours is the x-request-id rule below; Fastify must not take the header as it is.
    requestIdHeader: false,
    genReqId: (req) => {
      const presented = req.headers['x-request-id'];
      return typeof presented === 'string' && REQUEST_ID.test(presented) ? presented : randomUUID();
    },
    // Request logs are ours (onResponse below), each with the request id as `requestId`.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  // JSON only: a text/plain body is 415 unsupported_media_type, as documented, not a string the schema refuses.
  app.removeContentTypeParser('text/plain');

  // Route labels of the metrics come only from the patterns registered here (docs/decisions.md M6).
  const metrics = deps.metrics;
  if (metrics) app.addHook('onRoute', (route) => metrics.declareRoute(route.url));
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    // Liveness stays 200 while the process drains (a probe must not kill a draining server); the rest is 503.
    if (deps.stopping() && request.routeOptions.url !== '/healthz')
      throw new ApiProblem(503, 'shutting_down', 'the server is stopping; retry on another host or later');
  });
  installAuth(app, deps, options.rate ?? RATE_LIMIT_DEFAULTS);
  app.addHook('onResponse', async (request, reply) => {
    request.log.info(
      {
        method: request.method,
        route: request.routeOptions.url,
        url: request.url,
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
        tokenId: request.principal?.tokenId,
      },
      'request',
    );
    deps.metrics?.httpRequest(request.routeOptions.url, reply.statusCode, reply.elapsedTime / 1000);
  });

  app.setErrorHandler(async (error, request, reply) => {
    const problem = problemOf(error);
    if (problem) return sendProblem(reply, problem);
    // Unexpected: the log has it (by request id); the client gets nothing of it.
    request.log.error({ err: error }, 'request failed');
    return sendProblem(reply, INTERNAL_PROBLEM);
  });
  app.setNotFoundHandler(async (request, reply) =>
    sendProblem(reply, new ApiProblem(404, 'not_found', `no route ${request.method} ${request.url.split('?')[0]}`)),
  );

  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'paddock',
        version: API_VERSION,
        description: 'The HTTP API of `paddock serve` (docs/http-api.md).',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    },
    transform: createJsonSchemaTransform({ schemaRegistry: API_SCHEMAS }),
    transformObject: createJsonSchemaTransformObject({ schemaRegistry: API_SCHEMAS }),
  });
  app.get('/openapi.json', { config: { open: true }, schema: { hide: true } }, async () => app.swagger());

  await healthRoutes(app, deps);
  metricsRoutes(app, deps);
  await eventsRoutes(app, deps);
  await runsRoutes(app, deps);
  await sessionsRoutes(app, deps);
  webhooksRoutes(app, deps);
  // One count of open streams for the SSE routes and the OpenAI-compatible streams alike (docs/http-api.md).
  const streamQuota = new StreamQuota({ ...STREAM_QUOTA_DEFAULTS, ...options.streams }, (tokenId) =>
    apiTokenActive(deps.store, tokenId),
  );
  await openaiRoutes(app, deps, streamQuota);
  await adminRunsRoutes(app, deps);
  await adminAuditRoutes(app, deps);
  adminDoctorRoutes(app, deps);
  adminConfigRoutes(app, deps);
  if (options.console) consoleRoutes(app, options.console);
  adminBindingsRoutes(app, deps);
  approvalsRoutes(app, deps);
  whoamiRoutes(app, deps);
  overviewRoutes(app, deps);
  spendRoutes(app, deps);
  skillsRoutes(app, deps);
  tokensRoutes(app, deps);
  const streams = streamsRoutes(app, deps, streamQuota);
  // preClose: Fastify's close waits for open connections before its onClose hooks, and a stream never goes idle.
  app.addHook('preClose', async () => streams.endAll());
  return app;
}
