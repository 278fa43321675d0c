import type { Logger } from 'pino';
import type { ModelResource } from '../bindings/schema.js';
import type { Redactor } from '../secrets/redactor.js';
import { redactOutbound } from './outboundRequest.js';
import { Store } from '../state/store.js';
import { insertGatewayCall } from '../state/gatewayCalls.js';
import { CircuitBreaker } from './circuitBreaker.js';
import { createProvider, ProviderUnavailable, type Provider, type ProviderAnswer } from './providers/index.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseRetryAfter, RETRYABLE_STATUS, retryDelay } from './retry.js';
import { planReservation, releaseReservation, reserve, type CallReservation } from './modelBudget.js';
import type { GatewayRun } from './runContext.js';
import { WIRES, type NormalizedReply, type WireFormat } from './wire/index.js';
import { sseRedactor } from './wire/sseRedactor.js';

/** A refusal or failure the harness gets instead of an answer, in its wire's error shape. */
export interface CallRefusal {
  status: number;
  type: string;
  message: string;
  /** Who denied it (a binding field, the gateway), for the audit trail. */
  deniedBy?: string;
}

/** An answer on its way to the harness: redacted, metered, recorded when the body ends. */
export interface CallAnswer {
  status: number;
  headers: Record<string, string>;
  body: AsyncIterable<string>;
  /** Resolves with the assembled reply once the body has been consumed (or abandoned). */
  done: Promise<NormalizedReply>;
}

/** A model call as the gateway received it. */
export interface ModelCallRequest {
  endpoint: WireFormat | 'model/complete';
  format: WireFormat;
  body: Record<string, unknown>;
  query?: string;
  clientHeaders?: Record<string, string>;
  signal: AbortSignal;
  /** Text deltas as they pass (SDK streaming). */
  onText?: (text: string) => void;
}

/** Where the gateway's shared parts live: providers and breakers (by tenant and endpoint) outlive runs. */
export interface ModelCallDeps {
  store: Store;
  redactor: Redactor;
  log: Logger;
  providers: Map<string, Provider>;
  breakers: Map<string, CircuitBreaker>;
  /** Told of each call once its record committed (the gateway's observers, e.g. metrics); must not throw. */
  onCall?: (call: ObservedCall) => void;
}

/** What an observer hears of one recorded model call: figures only, no run data or text. */
export interface ObservedCall {
  provider: string;
  status: number;
  latencyMs: number;
  inputTokens: number;
  outputTokens: number;
}

/** Headers of a provider answer the harness may see. */
const ANSWER_HEADERS = [
  'content-type',
  'request-id',
  'x-request-id',
  'retry-after',
  'anthropic-ratelimit-requests-remaining',
  'x-paddock-scripted',
];

/** The model of a request: a granted model's resource id, or its provider name. */
export function findGrantedModel(run: GatewayRun, requested: unknown): ModelResource | undefined {
  const name = typeof requested === 'string' ? requested : '';
  const handle = run.access.models.find((m) => m.id === name) ?? run.access.models.find((m) => m.model === name);
  return handle ? run.resources.models.get(handle.id) : undefined;
}

/** Cost in USD of some tokens on a model (0 when the model has no pricing). */
export function costOf(model: ModelResource, usage: { inputTokens: number; outputTokens: number }): number {
  if (!model.pricing) return 0;
  return (
    (usage.inputTokens * model.pricing.inputPerMTokUsd + usage.outputTokens * model.pricing.outputPerMTokUsd) /
    1_000_000
  );
}

/**
 * One model call through the gateway (docs/gateway.md, "Model calls"): grant, budget, breaker,
 * provider with retries; the answer is redacted and metered as it streams, and recorded (one
 * `gateway_calls` row, one `gateway.call` audit record) when it ends.
 */
export async function callModel(
  deps: ModelCallDeps,
  run: GatewayRun,
  request: ModelCallRequest,
): Promise<CallAnswer | CallRefusal> {
  const started = Date.now();
  const requested = request.body.model;
  const model = findGrantedModel(run, requested);
  let held: { id: string; reservation: CallReservation } | undefined;
  const refuse = (
    unsafe: CallRefusal,
    modelId = typeof requested === 'string' ? requested : '?',
    provider = model?.provider ?? '?',
    attempts = 0,
  ) => {
    // A refusal can quote upstream text (a connection error, a provider's message): redacted here, for every path.
    const refusal = { ...unsafe, message: deps.redactor.text(unsafe.message) };
    record(deps, run, {
      modelId,
      provider,
      endpoint: request.endpoint,
      status: refusal.status,
      attempts,
      usage: { inputTokens: 0, outputTokens: 0 },
      cost: 0,
      latencyMs: Date.now() - started,
      error: refusal.message,
      deniedBy: refusal.deniedBy,
      scripted: model?.provider === 'scripted',
      held,
    });
    return refusal;
  };
  // The token was revoked (the run returned its result, or ended) while this request was on its way.
  if (run.signal.aborted) {
    return refuse({
      status: 401,
      type: 'authentication_error',
      deniedBy: 'gateway.runToken',
      message: `paddock: the run token is revoked (run ${run.claims.runId} ${abortReason(run.signal, 'ended')})`,
    });
  }
  if (!model) {
    return refuse({
      status: 403,
      type: 'permission_error',
      deniedBy: 'binding.grants.models',
      message:
        `paddock: model ${JSON.stringify(requested)} is not granted to run ${run.claims.runId} (granted: ` +
        `${run.access.models.map((m) => m.id).join(', ') || 'none'})`,
    });
  }
  const provider = providerFor(deps, model);
  if (!provider.formats.includes(request.format)) {
    return refuse(
      {
        status: 400,
        type: 'invalid_request_error',
        message:
          `paddock: model "${model.id}" (${model.provider}${model.api ? ` ${model.api}` : ''}) does not speak ` +
          `${request.format}; call it at ${provider.formats.map((f) => ENDPOINT_PATH[f]).join(' or ')}`,
      },
      model.id,
    );
  }
  // What the model is sent leaves the host: a secret value the host knows (or a credential's shape) is replaced
  // first — in the body, the query string and the passed-on headers — and the run is tainted, since the harness has
  // read it (docs/approvals.md §6).
  const sent = redactOutbound(
    deps.redactor,
    { body: request.body, query: request.query ?? '', clientHeaders: request.clientHeaders ?? {} },
    () => run.taint?.('secret', 'a model request through the gateway'),
  );
  const plan = planReservation(model, request.format, { ...sent.body, model: model.model });
  if ('invalid' in plan)
    return refuse({ status: 400, type: 'invalid_request_error', message: `paddock: ${plan.invalid}` }, model.id);
  const reservation = reserve(deps.store, run, plan.reservation);
  if (!('id' in reservation)) {
    run.notice('error', reservation.message);
    return refuse(reservation, model.id);
  }
  // From here every way out settles the reservation: refuse() and the answer's record do.
  held = { id: reservation.id, reservation: plan.reservation };
  const breaker = breakerFor(deps, run.tenant, provider.endpointKey);
  const { body } = plan;
  let attempt = 0;
  for (;;) {
    attempt += 1;
    if (!breaker.tryAcquire()) {
      return refuse(
        {
          status: 503,
          type: 'overloaded_error',
          deniedBy: 'gateway.circuitBreaker',
          message:
            `paddock: the circuit breaker of ${provider.endpointKey} is open after repeated failures; retry in ` +
            `${Math.ceil(breaker.retryInMs() / 1000)} s`,
        },
        model.id,
        model.provider,
        attempt - 1,
      );
    }
    // A call the host was paused in goes on when it resumes: none goes out once the lease may have run out.
    if (!deps.store.leaseHolds)
      return refuse(
        {
          status: 503,
          type: 'overloaded_error',
          deniedBy: 'host.lease',
          message: `paddock: ${Store.LEASE_MAY_HAVE_RUN_OUT}`,
        },
        model.id,
        model.provider,
        attempt - 1,
      );
    let answer: ProviderAnswer | undefined;
    let failure: string | undefined;
    try {
      answer = await provider.send({
        format: request.format,
        model,
        body,
        query: sent.query,
        clientHeaders: sent.clientHeaders,
        signal: request.signal,
        attempt,
      });
    } catch (error) {
      if (request.signal.aborted) {
        breaker.released();
        return refuse(
          {
            status: 499,
            type: 'api_error',
            message: `paddock: ${abortReason(request.signal, 'the caller went away')}`,
          },
          model.id,
          model.provider,
          attempt,
        );
      }
      if (error instanceof ProviderUnavailable && !error.retryable) {
        breaker.released();
        return refuse(
          { status: 502, type: 'api_error', message: `paddock: ${error.message}` },
          model.id,
          model.provider,
          attempt,
        );
      }
      failure = deps.redactor.text(error instanceof Error ? error.message : String(error));
    }
    const retryable = failure !== undefined || RETRYABLE_STATUS.has(answer!.status);
    if (!retryable) {
      breaker.succeeded();
      return meteredAnswer(deps, run, model, provider, request, answer!, attempt, started, held);
    }
    breaker.failed();
    const delay =
      attempt <= model.maxRetries ? retryDelay(attempt, parseRetryAfter(answer?.headers['retry-after'])) : undefined;
    if (delay === undefined) {
      if (answer) return meteredAnswer(deps, run, model, provider, request, answer, attempt, started, held);
      return refuse(
        {
          status: 502,
          type: 'api_error',
          message: `paddock: ${failure} (after ${attempt} attempt${attempt > 1 ? 's' : ''})`,
        },
        model.id,
        model.provider,
        attempt,
      );
    }
    if (answer) await drain(answer.body);
    deps.log.info(
      { runId: run.claims.runId, model: model.id, attempt, status: answer?.status, failure, delayMs: delay },
      'gateway: retrying model call',
    );
    try {
      await sleep(delay, undefined, { signal: request.signal });
    } catch {
      return refuse(
        { status: 499, type: 'api_error', message: `paddock: ${abortReason(request.signal, 'the caller went away')}` },
        model.id,
        model.provider,
        attempt,
      );
    }
  }
}

/** Paths of the wire formats, for messages. */
export const ENDPOINT_PATH: Record<WireFormat, string> = {
  anthropic: '/v1/messages',
  responses: '/v1/responses',
  chat: '/v1/chat/completions',
};

function providerFor(deps: ModelCallDeps, model: ModelResource): Provider {
  // Keyed by the whole spec: an edited resource gets a fresh provider (and scripted counters).
  const key = JSON.stringify(model);
  let provider = deps.providers.get(key);
  if (!provider) deps.providers.set(key, (provider = createProvider(model, deps.redactor)));
  return provider;
}

/**
 * The breaker of one tenant's calls to one provider endpoint: another tenant's failing calls (a bad key, prompts the
 * provider refuses) never open it, even where the operator's models of both tenants share the endpoint.
 */
function breakerFor(deps: ModelCallDeps, tenant: string, endpointKey: string): CircuitBreaker {
  const key = JSON.stringify([tenant, endpointKey]);
  let breaker = deps.breakers.get(key);
  if (!breaker) {
    breaker = new CircuitBreaker((from, to, failures) => {
      deps.log.warn({ tenant, endpoint: endpointKey, from, to, failures }, 'gateway: circuit breaker');
      deps.store.transaction(() =>
        deps.store.audit.append({
          type: 'gateway.circuit',
          actor: 'host',
          data: { tenant, endpoint: endpointKey, from, to, consecutiveFailures: failures },
        }),
      );
    });
    deps.breakers.set(key, breaker);
  }
  return breaker;
}

async function drain(body: AsyncIterable<string>): Promise<void> {
  for await (const _ of body) {
    /* discard a failed attempt's body */
  }
}

/**
 * Wrap a provider answer. This is the gateway's one redaction point for model answers: every byte
 * that leaves it, on every path, is redacted here — the body as it streams (an SSE body event by
 * event, each streamed string as one chunk-safe stream; any other body chunk-safe as bytes), the
 * headers, the text deltas of SDK streaming (one chunk-safe stream over their concatenation), the
 * assembled reply the SDK's `model/complete` returns (text and tool arguments, whole), and the
 * error text that is recorded.
 */
function meteredAnswer(
  deps: ModelCallDeps,
  run: GatewayRun,
  model: ModelResource,
  provider: Provider,
  request: ModelCallRequest,
  answer: ProviderAnswer,
  attempts: number,
  started: number,
  held: CallRecord['held'],
): CallAnswer {
  const contentType = answer.headers['content-type'] ?? '';
  const stream = contentType.includes('text/event-stream');
  const onText = answer.status < 300 ? request.onText : undefined;
  const deltas = deps.redactor.stream();
  const safeText = onText
    ? (text: string) => {
        const safe = deltas.push(text);
        if (safe) onText(safe);
      }
    : undefined;
  // The assembler reads the provider's own bytes (redaction must not break their framing); what it builds is redacted
  // below.
  const assembler = WIRES[request.format].assembler(stream, safeText);
  // An SSE answer is redacted event by event (a key split across two events is caught); anything else as bytes.
  const redactStream = stream ? sseRedactor(deps.redactor) : deps.redactor.stream();
  let resolveDone!: (reply: NormalizedReply) => void;
  const done = new Promise<NormalizedReply>((resolve) => (resolveDone = resolve));
  async function* body(): AsyncIterable<string> {
    let error: string | undefined;
    let errorText = '';
    try {
      for await (const chunk of answer.body) {
        const safe = redactStream.push(chunk);
        assembler.push(chunk);
        if (answer.status >= 400 && errorText.length < 2000) errorText += chunk;
        if (safe) yield safe;
      }
      const tail = redactStream.end();
      if (tail) yield tail;
    } catch (e) {
      error = request.signal.aborted
        ? abortReason(request.signal, 'the caller went away')
        : `stream broke: ${(e as Error).message}`;
    } finally {
      const reply = deps.redactor.value(assembler.result());
      const tail = deltas.end();
      if (tail) onText?.(tail);
      const usage = reply.usage;
      if (answer.status >= 400) error ??= deps.redactor.text(errorText.slice(0, 500));
      record(deps, run, {
        modelId: model.id,
        provider: model.provider,
        endpoint: request.endpoint,
        status: answer.status,
        attempts,
        usage,
        cost: costOf(model, usage),
        latencyMs: Date.now() - started,
        error,
        scripted: provider.scripted,
        stopReason: reply.stopReason,
        held,
      });
      resolveDone(reply);
    }
  }
  const headers: Record<string, string> = {};
  for (const name of ANSWER_HEADERS) if (answer.headers[name]) headers[name] = deps.redactor.text(answer.headers[name]);
  return { status: answer.status, headers, body: body(), done };
}

/** What one call's record holds. */
interface CallRecord {
  modelId: string;
  provider: string;
  endpoint: ModelCallRequest['endpoint'];
  status: number;
  attempts: number;
  usage: { inputTokens: number; outputTokens: number };
  cost: number;
  latencyMs: number;
  error?: string;
  deniedBy?: string;
  scripted?: boolean;
  stopReason?: string;
  /** The call's budget reservation, settled (deleted) in the transaction that records the call. */
  held?: { id: string; reservation: CallReservation };
}

/** One `gateway_calls` row and its audit record, in one transaction. */
function record(deps: ModelCallDeps, run: GatewayRun, r: CallRecord): void {
  const { store } = deps;
  const now = new Date();
  const { claims } = run;
  store.transaction(() => {
    if (r.held) releaseReservation(store, r.held.id);
    // This row is written directly, not through the store's redaction of events and audit data.
    insertGatewayCall(store, {
      at: now,
      runId: claims.runId,
      sessionId: claims.sessionId,
      bindingId: claims.bindingId,
      modelId: r.modelId,
      provider: r.provider,
      endpoint: r.endpoint,
      status: r.status,
      attempts: r.attempts,
      inputTokens: r.usage.inputTokens,
      outputTokens: r.usage.outputTokens,
      costUsd: r.cost,
      latencyMs: r.latencyMs,
      error: r.error === undefined ? null : deps.redactor.text(r.error),
    });
    store.audit.append({
      type: r.deniedBy || (r.status >= 400 && r.attempts === 0) ? 'gateway.denied' : 'gateway.call',
      actor: `runner:${claims.runnerId}`,
      sessionId: claims.sessionId,
      runId: claims.runId,
      data: {
        model: r.modelId,
        provider: r.provider,
        ...(r.scripted ? { scripted: true } : {}),
        endpoint: r.endpoint,
        status: r.status,
        attempts: r.attempts,
        inputTokens: r.usage.inputTokens,
        outputTokens: r.usage.outputTokens,
        costUsd: r.cost,
        latencyMs: r.latencyMs,
        ...(r.held
          ? { reservedTokens: r.held.reservation.tokens, reservedCostUsd: r.held.reservation.costUsd, ...overrun(r) }
          : {}),
        ...(r.stopReason ? { stopReason: r.stopReason } : {}),
        ...(r.error ? { error: r.error } : {}),
        ...(r.deniedBy ? { deniedBy: r.deniedBy } : {}),
      },
    });
  });
  deps.onCall?.({
    provider: r.provider,
    status: r.status,
    latencyMs: r.latencyMs,
    inputTokens: r.usage.inputTokens,
    outputTokens: r.usage.outputTokens,
  });
  run.onCallRecorded?.({
    status: r.status,
    inputTokens: r.usage.inputTokens,
    outputTokens: r.usage.outputTokens,
    costUsd: r.cost,
    ...(r.error ? { error: r.error } : {}),
    ...(r.deniedBy ? { deniedBy: r.deniedBy } : {}),
  });
}

/** How far a call's metered usage went past its reservation (charged in full; docs/gateway.md "The bound"). */
function overrun(r: CallRecord): { overrunTokens?: number } {
  const over = r.usage.inputTokens + r.usage.outputTokens - (r.held?.reservation.tokens ?? Infinity);
  return over > 0 ? { overrunTokens: over } : {};
}

/** Why a signal was aborted (its reason's message), for records and messages. */
function abortReason(signal: AbortSignal, fallback: string): string {
  const reason = signal.reason as unknown;
  return reason instanceof Error ? reason.message : fallback;
}
