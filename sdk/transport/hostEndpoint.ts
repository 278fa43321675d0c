import { ErrorCodes } from '../protocol/errorCodes.js';
import { HOST_METHODS, HOST_METHOD_NAMES, RUNNER_METHODS, type HostMethodName } from '../protocol/methods.js';
import { RpcError } from '../protocol/rpcError.js';
import { RunUpdateParamsSchema } from '../protocol/schemas/updates.js';
import type {
  InitializeResult,
  RunMessageParams,
  RunMessageResult,
  RunParams,
  RunResult,
  RunUpdateParams,
} from '../protocol/types.js';
import { PROTOCOL_VERSION } from '../protocol/version.js';
import { checkGrant } from './grantCheck.js';
import { JsonRpcPeer, type ProtocolViolation } from './peer.js';
import { DEFAULT_REQUEST_LIMITS, RequestBudget, type RequestLimits } from './requestBudget.js';

/** Who is asking: the run the request was checked against. */
export interface HostRequestScope {
  runId: string;
  signal: AbortSignal;
  /**
   * Send a host → runner notification while the request is pending (e.g. `model/delta`); dropped once the run is
   * over.
   */
  notify(method: 'model/delta', params: Record<string, unknown>): void;
}

/**
 * Answers runner → host requests that passed the endpoint's checks (active run, granted
 * method). The host plugs state, gateway, fs and approvals in here; the fake host its stubs.
 */
export interface HostRequestHandler {
  handle(method: HostMethodName, params: Record<string, unknown>, scope: HostRequestScope): Promise<unknown>;
}

/** What the host side of a runner connection needs. */
export interface HostEndpointOptions {
  send(line: string): void;
  /** A message from the runner broke the protocol; the run fails with protocol_error. */
  onViolation(violation: ProtocolViolation): void;
  /** A valid `run/update` of the active run, with the byte size of its line. */
  onUpdate(params: RunUpdateParams, lineBytes: number): void;
  /**
   * The decision on every runner → host request, once: a refusal of the endpoint's own checks at
   * once; otherwise when its handler settles — the refusal it threw (an {@link RpcError} carrying
   * `data.deniedBy`, e.g. the path policy's), or `accepted` (it answered, or failed for a reason
   * that is not a refusal). A request still in flight when the run ends is decided by
   * {@link HostEndpoint.settleHostRequests}.
   */
  onHostRequest?(method: HostMethodName, runId: string, outcome: 'accepted' | RpcError): void;
  hostRequests: HostRequestHandler;
  host: { name: string; version: string };
  /** Host code threw while handling a runner message (not an {@link RpcError}): the owner fails the run. */
  onHandlerError?(method: string, error: unknown): void;
  /** Most levels of arrays and objects a runner message may nest (default: the protocol's `MAX_JSON_DEPTH`). */
  maxDepth?: number;
}

interface ActiveRun {
  runId: string;
  /** The binding sent in `run`: the run's grants. */
  binding: RunParams['binding'];
  budget: RequestBudget;
  lastSeq: number;
  /** The runner answered `run`: its requests are refused from now on (updates still drain). */
  closed?: boolean;
  controller: AbortController;
}

/**
 * The host's side of one runner connection, shared by the real host and the SDK's fake host so
 * both apply the same checks. Typed calls to the runner; every runner → host
 * request is checked against the active run (id and granted methods) before the handler sees
 * it; `run/update` must name the active run and carry the next `seq`.
 */
export class HostEndpoint {
  readonly peer: JsonRpcPeer;
  private active: ActiveRun | undefined;
  private currentLineBytes = 0;
  /** Host requests past the endpoint's checks whose handler has not settled yet, with their decide. */
  private readonly inFlight = new Map<Promise<void>, (verdict: 'accepted') => void>();

  constructor(private readonly options: HostEndpointOptions) {
    this.peer = new JsonRpcPeer({
      send: options.send,
      onViolation: options.onViolation,
      onHandlerError: options.onHandlerError,
      unknownNotifications: 'violation',
      maxDepth: options.maxDepth,
      // Recorded like any refused request (the runner got QuotaExceeded; the run goes on).
      onRequestTooDeep: (method, params, error) => {
        const runId = (params as { runId?: unknown } | null | undefined)?.runId;
        this.options.onHostRequest?.(method as HostMethodName, typeof runId === 'string' ? runId : '', error);
      },
    });
    this.peer.onNotification('run/update', RunUpdateParamsSchema, (params) => this.acceptUpdate(params));
    for (const method of HOST_METHOD_NAMES) {
      this.peer.onRequest(method, HOST_METHODS[method].params, (params) =>
        this.answerHostRequest(method, params as Record<string, unknown>),
      );
    }
  }

  /** Byte size of the inbound line being dispatched (set by the reader just before dispatch). */
  noteLineBytes(bytes: number): void {
    this.currentLineBytes = bytes;
  }

  /** Send `initialize`; rejects with `RunnerUnresponsive` after `timeoutMs`. */
  initialize(timeoutMs: number): Promise<InitializeResult> {
    return this.peer.request(
      'initialize',
      { protocolVersion: PROTOCOL_VERSION, host: this.options.host, capabilities: { hostRequests: HOST_METHOD_NAMES } },
      RUNNER_METHODS.initialize.result,
      { timeoutMs },
    );
  }

  /**
   * Send `run` and resolve with the runner's (validated) result. From now until {@link endRun},
   * runner requests naming this run are checked against `params.binding` and `limits`.
   */
  run(params: RunParams, limits: RequestLimits = DEFAULT_REQUEST_LIMITS): Promise<RunResult> {
    this.active = {
      runId: params.run.runId,
      binding: structuredClone(params.binding),
      budget: new RequestBudget(limits),
      lastSeq: 0,
      controller: new AbortController(),
    };
    // The run's scope closes the moment its answer line arrives: a request the runner sends
    // right after its result is refused, even if it is read before the result is processed.
    const active = this.active;
    return this.peer.request('run', params, RUNNER_METHODS.run.result, { onAnswerLine: () => (active.closed = true) });
  }

  /** Ask the runner to stop the active run. */
  cancel(runId: string, reason: string): void {
    this.peer.notify('run/cancel', { runId, reason });
  }

  /**
   * Deliver a user message to the active run (`run/message`, steering `append`). Never rejects: a refusal, an error
   * answer, no answer within `timeoutMs`, a run that is not active, and an answer read after the run's own result line
   * (the run was over before it took the message), or one read when `live()` says the owner is ending the run, are
   * all `accepted: false`, with the reason. An invalid answer is a protocol violation as well (the owner fails the
   * run).
   */
  async message(params: RunMessageParams, timeoutMs: number, live = () => true): Promise<RunMessageResult> {
    const run = this.active;
    if (!run || run.runId !== params.runId || run.closed || !live())
      return { accepted: false, reason: 'the run is not active' };
    // Lines are read in order: whether the run's result came first is known when the answer's line is read.
    let endedFirst = false;
    try {
      const answer = await this.peer.request('run/message', params, RUNNER_METHODS['run/message'].result, {
        timeoutMs,
        onAnswerLine: () => (endedFirst = run.closed === true || !live()),
      });
      if (answer.accepted && endedFirst) return { accepted: false, reason: 'the run ended before it took the message' };
      return answer;
    } catch (error) {
      return { accepted: false, reason: error instanceof RpcError ? error.message : String(error) };
    }
  }

  /** Send `shutdown`; rejects on timeout like any request. */
  shutdown(timeoutMs: number): Promise<unknown> {
    return this.peer.request('shutdown', {}, RUNNER_METHODS.shutdown.result, { timeoutMs });
  }

  /** The run is over: later updates and requests for it are refused, in-flight host work is aborted. */
  endRun(): void {
    this.active?.controller.abort(new Error('run ended'));
    this.active = undefined;
  }

  /**
   * Wait (at most `ms`) for the host requests still being handled — {@link endRun} aborted them —
   * so each is decided by its handler's real outcome; one still pending after that is recorded
   * `accepted` (it passed every check; nothing refused it while the run lasted).
   */
  async settleHostRequests(ms: number): Promise<void> {
    if (this.inFlight.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(this.inFlight.keys()),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))),
    ]);
    clearTimeout(timer);
    for (const [pending, decide] of [...this.inFlight]) {
      this.inFlight.delete(pending);
      decide('accepted');
    }
  }

  /** Number of updates accepted for the active run. */
  get updateCount(): number {
    return this.active?.lastSeq ?? 0;
  }

  /** Close: every pending request to the runner rejects with `error`. */
  close(error: RpcError): void {
    this.endRun();
    this.peer.close(error);
  }

  private acceptUpdate(params: RunUpdateParams): void {
    const run = this.active;
    if (!run || params.runId !== run.runId) {
      this.options.onViolation({
        code: ErrorCodes.InvalidMessage,
        reason: `run/update for run ${params.runId}, which is not active`,
      });
      return;
    }
    if (params.seq !== run.lastSeq + 1) {
      this.options.onViolation({
        code: ErrorCodes.InvalidMessage,
        reason: `run/update seq ${params.seq} out of order (expected ${run.lastSeq + 1})`,
      });
      return;
    }
    run.lastSeq = params.seq;
    this.options.onUpdate(params, this.currentLineBytes);
  }

  private async answerHostRequest(method: HostMethodName, params: Record<string, unknown>): Promise<unknown> {
    // The connection, not the payload, says which run is active: a request for any other run id is refused.
    const runId = String(params.runId);
    const run = this.active;
    let refusal: RpcError | undefined;
    if (!run || run.runId !== runId || run.closed) refusal = RpcError.runNotActive(runId);
    else {
      // Size of the params as sent: the request's own bytes, whatever line they arrived on.
      refusal =
        checkGrant(method, params, run.binding, runId) ?? run.budget.take(Buffer.byteLength(JSON.stringify(params)));
    }
    if (refusal || !run) {
      this.options.onHostRequest?.(method, runId, refusal!);
      throw refusal;
    }
    const notify = (name: 'model/delta', body: Record<string, unknown>) => {
      if (this.active === run && !run.controller.signal.aborted) this.peer.notify(name, body);
    };
    // The decision is recorded once, from what the handler did: a refusal it threw (the path
    // policy, a budget, a quota…) is a denial like the endpoint's own, never an `accepted`.
    let decided = false;
    const decide = (verdict: 'accepted' | RpcError) => {
      if (decided) return;
      decided = true;
      this.options.onHostRequest?.(method, runId, verdict);
    };
    const answer = this.options.hostRequests.handle(method, params, { runId, signal: run.controller.signal, notify });
    const settled = answer.then(
      () => decide('accepted'),
      (error: unknown) => decide(error instanceof RpcError && error.deniedBy !== undefined ? error : 'accepted'),
    );
    this.inFlight.set(settled, decide);
    void settled.finally(() => this.inFlight.delete(settled));
    await settled;
    return answer;
  }
}
