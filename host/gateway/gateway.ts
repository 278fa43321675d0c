import { chmodSync, mkdirSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import type { Redactor } from '../secrets/redactor.js';
import { Store } from '../state/store.js';
import type { CircuitBreaker } from './circuitBreaker.js';
import { KnowledgeBases } from './kb/retrieve.js';
import { KB_MCP_SERVER } from './mcp/kbToolNames.js';
import { McpUpstreams } from './mcp/upstreams.js';
import { callModel, costOf, type CallRefusal, type ModelCallDeps, type ObservedCall } from './modelCall.js';
import { releaseRunReservations } from './modelBudget.js';
import { formatsOf, type Provider } from './providers/index.js';
import type { ModelResource } from '../bindings/schema.js';
import { sandboxBackend, type Backend } from '../sandbox/backend.js';
import { runSocketPath } from '../sandbox/runSockets.js';
import type { GatewayRun } from './runContext.js';
import { isClaims, presentedToken, RunTokens, type RunTokenClaims } from './runTokens.js';
import { WIRES, type WireFormat } from './wire/index.js';

/** Where the gateway appears inside a bwrap sandbox: the bound socket and the bridged local port. */
export const GATEWAY_IN_SANDBOX = { socket: '/run/paddock/gateway.sock', port: 3129 } as const;

/** Largest request body the gateway reads (a harness's whole conversation). */
const MAX_BODY_BYTES = 32 * 1024 * 1024;

const ROUTES: Record<string, WireFormat> = {
  '/v1/messages': 'anthropic',
  '/v1/responses': 'responses',
  '/v1/chat/completions': 'chat',
};

/** One run's access to the gateway. */
export interface GatewayRunHandle {
  /** The run token (give it to the runner in its environment only). */
  token: string;
  /** The gateway's base URL as the run reaches it. */
  baseUrl: string;
  /** Host path of the run's own socket (bwrap only), to bind at {@link GATEWAY_IN_SANDBOX}.socket. */
  socketPath?: string;
  /** The run's gateway state (for SDK host requests). */
  run: GatewayRun;
  upstreams: McpUpstreams;
  /**
   * Revoke the token now (the host read the run's result): later requests get 401, in-flight
   * model calls and MCP requests are cut. The socket stays until {@link close}.
   */
  revoke(): void;
  /** Revoke the token, stop in-flight calls, close MCP connections and the run's socket. */
  close(): Promise<void>;
}

/** What opening a run needs. */
export type OpenRunInput = Omit<GatewayRun, 'claims' | 'signal'> & { claims: RunTokenClaims };

/**
 * The host gateway (docs/gateway.md): model endpoints in three wire formats and per-run MCP
 * endpoints, authenticated by run tokens. One host-wide loopback listener serves runs that share
 * the host's network (`process` backend); each bwrap run gets its own Unix socket that serves its
 * token only.
 */
export class Gateway {
  private readonly tokens = new RunTokens();
  private readonly runs = new Map<string, { run: GatewayRun; upstreams: McpUpstreams; controller: AbortController }>();
  private readonly providers = new Map<string, Provider>();
  private readonly breakers = new Map<string, CircuitBreaker>();
  private readonly sockets = new Set<Socket>();
  private tcp: Promise<{ server: Server; port: number }> | undefined;
  private readonly callObservers = new Set<(call: ObservedCall) => void>();
  readonly knowledgeBases: KnowledgeBases;

  constructor(private readonly deps: { store: Store; redactor: Redactor; log: Logger; dataDir: string }) {
    this.knowledgeBases = new KnowledgeBases(deps.dataDir, deps.redactor);
  }

  /** Open the gateway for a run: mint its token and make it reachable from the run's sandbox. */
  async openRun(input: OpenRunInput): Promise<GatewayRunHandle> {
    const controller = new AbortController();
    const run: GatewayRun = { ...input, signal: controller.signal };
    const token = this.tokens.mint(input.claims);
    this.deps.redactor.add(token);
    const upstreams = new McpUpstreams(run, this.deps);
    this.runs.set(input.claims.runId, { run, upstreams, controller });
    let socketPath: string | undefined;
    let perRun: Server | undefined;
    let baseUrl: string;
    try {
      // A run without host network reaches the gateway only through a socket bound into its sandbox.
      if (sandboxBackend(input.backend).gatewayOnSocket) {
        socketPath = runSocketPath(this.deps.dataDir, input.claims.runId, 'gateway');
        mkdirSync(dirname(socketPath), { recursive: true, mode: 0o700 });
        rmSync(socketPath, { force: true });
        perRun = this.server(input.claims.runId);
        await new Promise<void>((resolve, reject) => perRun!.once('error', reject).listen(socketPath, resolve));
        chmodSync(socketPath, 0o666); // the sandbox's uid must be able to connect
        baseUrl = `http://127.0.0.1:${GATEWAY_IN_SANDBOX.port}`;
      } else baseUrl = `http://127.0.0.1:${(await this.loopback()).port}`;
    } catch (error) {
      this.forget(input.claims.runId);
      throw error;
    }
    return {
      token,
      baseUrl,
      socketPath,
      run,
      upstreams,
      revoke: () => this.revoke(input.claims.runId, 'returned its result'),
      close: async () => {
        this.forget(input.claims.runId);
        await upstreams.close();
        if (perRun) {
          await closeServer(perRun);
          rmSync(socketPath!, { force: true });
        }
        // Revoked, the token is harmless; everything the run wrote is stored by now.
        this.deps.redactor.forget(token);
      },
    };
  }

  /** The host-wide loopback listener's URL (started on first use). */
  async loopbackUrl(): Promise<string> {
    return `http://127.0.0.1:${(await this.loopback()).port}`;
  }

  /** Stop listening (runs still open keep their sockets until they close). */
  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    if (this.tcp) await closeServer((await this.tcp).server);
    this.tcp = undefined;
    this.knowledgeBases.close();
  }

  /** Hear about every model call once its record committed (metrics). Returns the unsubscribe function. */
  observeCalls(listener: (call: ObservedCall) => void): () => void {
    this.callObservers.add(listener);
    return () => this.callObservers.delete(listener);
  }

  /** Shared parts for SDK host requests that take the gateway path. */
  get callDeps(): ModelCallDeps {
    return { ...this.deps, providers: this.providers, breakers: this.breakers, onCall: (call) => this.tell(call) };
  }

  /** An observer's failure is logged, never the call's (its record has committed). */
  private tell(call: ObservedCall): void {
    for (const listener of this.callObservers) {
      try {
        listener(call);
      } catch (error) {
        this.deps.log.warn({ err: error }, 'a model-call observer failed');
      }
    }
  }

  /** Redact a message before it goes to a runner. */
  redact(text: string): string {
    return this.deps.redactor.text(text);
  }

  /** The wire format the gateway uses to call a model for SDK `model/complete`. */
  formatFor(model: ModelResource): WireFormat {
    return formatsOf(model)[0]!;
  }

  /** Cost in USD of some tokens on a model. */
  costOf(model: ModelResource, usage: { inputTokens: number; outputTokens: number }): number {
    return costOf(model, usage);
  }

  /** An audit record about a run's gateway use. */
  auditRun(run: GatewayRun, type: string, data: Record<string, unknown>): void {
    const { store } = this.deps;
    const { claims } = run;
    store.transaction(() =>
      store.audit.append({
        type,
        actor: `runner:${claims.runnerId}`,
        sessionId: claims.sessionId,
        runId: claims.runId,
        data,
      }),
    );
  }

  /** Revoke a run's token and cut its in-flight calls (the first reason is the one reported). */
  private revoke(runId: string, why: string): void {
    this.tokens.revoke(runId, why);
    const entry = this.runs.get(runId);
    if (entry && !entry.controller.signal.aborted) entry.controller.abort(new Error(why));
  }

  private forget(runId: string): void {
    this.revoke(runId, 'ended');
    this.runs.delete(runId);
    // Every call settles its own reservation; this only catches one whose answer was never read.
    // Best effort: teardown must not fail a run (a row left behind is dropped once this host exits).
    try {
      const left = releaseRunReservations(this.deps.store, runId);
      if (left > 0)
        this.deps.log.warn({ runId, reservations: left }, 'gateway: released reservations of calls that never settled');
    } catch (error) {
      this.deps.log.warn({ runId, err: error }, "gateway: could not release the run's reservations");
    }
  }

  private loopback(): Promise<{ server: Server; port: number }> {
    this.tcp ??= new Promise((resolve, reject) => {
      const server = this.server(undefined);
      server.once('error', reject).listen(0, '127.0.0.1', () => {
        // The listener never keeps the host process alive on its own.
        server.unref();
        resolve({ server, port: (server.address() as AddressInfo).port });
      });
    });
    return this.tcp;
  }

  private server(boundRunId: string | undefined): Server {
    const server = createServer((req, res) => {
      this.handle(req, res, boundRunId).catch((error: unknown) => {
        this.deps.log.error({ err: error, url: req.url }, 'gateway: request failed');
        if (!res.headersSent)
          sendJson(res, 500, {
            type: 'error',
            error: { type: 'api_error', message: 'paddock gateway: internal error' },
          });
        else res.destroy();
      });
    });
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    return server;
  }

  private async handle(req: IncomingMessage, res: ServerResponse, boundRunId: string | undefined): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://gateway');
    const format = ROUTES[url.pathname];
    const mcp = /^\/mcp\/(_kb|[a-z0-9][a-z0-9._-]{0,63})$/.exec(url.pathname);
    if (!format && !mcp)
      return sendJson(res, 404, {
        type: 'error',
        error: { type: 'not_found_error', message: `paddock gateway: no endpoint ${url.pathname}` },
      });
    const wire = WIRES[format ?? 'anthropic'];
    const fail = (status: number, type: string, message: string) =>
      sendJson(res, status, wire.errorBody(status, type, message));

    const claims = this.tokens.resolve(presentedToken(req.headers));
    // A sandboxed (bwrap) run's token is valid on its own socket only, never on the loopback
    // listener, which any local process can reach.
    const socketOnly = isClaims(claims) && !boundRunId && sandboxOnSocket(this.runs.get(claims.runId)?.run.backend);
    if (!isClaims(claims) || (boundRunId && claims.runId !== boundRunId) || socketOnly) {
      const reason = !isClaims(claims)
        ? claims.reason
        : socketOnly
          ? 'of a sandboxed run on the loopback listener'
          : 'another run';
      const message =
        reason === 'revoked'
          ? `paddock: the run token is revoked (run ${claims.runId} ${(claims as { why?: string }).why ?? 'ended'})`
          : reason === 'missing'
            ? 'paddock: a run token is required (x-api-key or Authorization: Bearer)'
            : reason === 'another run'
              ? 'paddock: this token belongs to another run'
              : socketOnly
                ? "paddock: this run token is valid only on its run's own gateway socket"
                : 'paddock: unknown run token';
      this.deps.store.transaction(() =>
        this.deps.store.audit.append({
          type: 'gateway.denied',
          actor: 'unknown',
          ...(boundRunId ? { runId: boundRunId } : {}),
          data: {
            path: url.pathname,
            reason: `token ${reason}`,
            deniedBy: 'gateway.runToken',
            ...(claims.runId ? { tokenRunId: claims.runId } : {}),
          },
        }),
      );
      return fail(401, 'authentication_error', message);
    }
    // A host resumed past its lease calls no model and no tool for a run another host may have taken over (outside
    // attack 5, F2): its runner's requests may have waited in the socket meanwhile.
    if (!this.deps.store.leaseHolds) return fail(503, 'overloaded_error', `paddock: ${Store.LEASE_MAY_HAVE_RUN_OUT}`);
    const entry = this.runs.get(claims.runId)!;
    if (req.method !== 'POST' && !(mcp && (req.method === 'GET' || req.method === 'DELETE')))
      return fail(405, 'invalid_request_error', `paddock: ${req.method} is not served at ${url.pathname}`);

    let body: unknown;
    if (req.method === 'POST') {
      const text = await readBody(req);
      if (text === undefined)
        return fail(413, 'request_too_large', `paddock: request body over ${MAX_BODY_BYTES} bytes`);
      try {
        body = JSON.parse(text);
      } catch {
        return fail(400, 'invalid_request_error', 'paddock: the request body is not JSON');
      }
    }
    if (mcp) {
      const serverId = mcp[1]!;
      if (serverId === KB_MCP_SERVER) {
        if (entry.run.access.knowledgeBases.length === 0) {
          this.deps.store.transaction(() =>
            this.deps.store.audit.append({
              type: 'kb.denied',
              actor: `runner:${claims.runnerId}`,
              sessionId: claims.sessionId,
              runId: claims.runId,
              data: { deniedBy: 'binding.grants.knowledgeBases', reason: 'no knowledge base granted' },
            }),
          );
          return fail(403, 'permission_error', `paddock: no knowledge base is granted to run ${claims.runId}`);
        }
        return (await import('./mcp/kbEndpoint.js')).serveKbMcpRequest(this, entry.run, req, res, body);
      }
      if (!entry.run.access.mcpServers.some((s) => s.id === serverId)) {
        this.deps.store.transaction(() =>
          this.deps.store.audit.append({
            type: 'mcp.denied',
            actor: `runner:${claims.runnerId}`,
            sessionId: claims.sessionId,
            runId: claims.runId,
            data: { server: serverId, deniedBy: 'binding.grants.mcpServers', reason: 'server not granted' },
          }),
        );
        return fail(403, 'permission_error', `paddock: MCP server "${serverId}" is not granted to run ${claims.runId}`);
      }
      // The MCP SDK loads with a run's first MCP request, not with every host (docs/benchmarks.md, CLI start-up).
      return (await import('./mcp/endpoint.js')).serveMcpRequest(entry.upstreams, serverId, req, res, body);
    }
    if (!body || typeof body !== 'object' || Array.isArray(body))
      return fail(400, 'invalid_request_error', 'paddock: the request body must be a JSON object');

    const controller = new AbortController();
    const abort = () =>
      controller.abort(
        new Error(
          entry.run.signal.aborted
            ? `the run token was revoked (run ${claims.runId} ${abortMessage(entry.run.signal)})`
            : 'the caller went away',
        ),
      );
    res.on('close', () => {
      if (!res.writableFinished) abort();
    });
    entry.run.signal.addEventListener('abort', abort, { once: true });
    try {
      const clientHeaders: Record<string, string> = {};
      for (const name of ['anthropic-version', 'anthropic-beta', 'openai-beta'])
        if (typeof req.headers[name] === 'string') clientHeaders[name] = req.headers[name] as string;
      // A harness whose model names are fixed (Codex wants one of its bundled names) selects the
      // granted model with this header instead; the body's name is then only cosmetic.
      const selector = req.headers['x-paddock-model'];
      const request =
        typeof selector === 'string' && selector
          ? { ...(body as Record<string, unknown>), model: selector }
          : (body as Record<string, unknown>);
      const answer = await callModel(this.callDeps, entry.run, {
        endpoint: format!,
        format: format!,
        body: request,
        query: url.search,
        clientHeaders,
        signal: controller.signal,
      });
      if (isRefusal(answer)) return fail(answer.status, answer.type, answer.message);
      res.writeHead(answer.status, answer.headers);
      for await (const chunk of answer.body) {
        // Wait for drain or close: a caller that went away must not leave the answer unread
        // (its record and reservation settle when the body ends).
        if (res.destroyed) continue;
        if (!res.write(chunk)) await new Promise((r) => res.once('drain', r).once('close', r));
      }
      // A cut stream (token revoked mid-answer) ends as a broken connection, not a clean end.
      if (controller.signal.aborted || res.destroyed) res.destroy();
      else res.end();
    } finally {
      entry.run.signal.removeEventListener('abort', abort);
    }
  }
}

/** Whether a run of this backend is served only on its own socket (its token refused on the loopback listener). */
function sandboxOnSocket(backend: Backend | undefined): boolean {
  return backend !== undefined && sandboxBackend(backend).gatewayOnSocket;
}

function abortMessage(signal: AbortSignal): string {
  return signal.reason instanceof Error ? signal.reason.message : 'ended';
}

/** Is this a refusal rather than an answer? */
export function isRefusal(x: object): x is CallRefusal {
  return !('body' in x);
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** The request body as text, or undefined past the size cap. */
async function readBody(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}
