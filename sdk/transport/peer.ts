import { JSONRPCClient, JSONRPCErrorException, JSONRPCServer, JSONRPCServerAndClient } from 'json-rpc-2.0';
import type { z } from 'zod';
import { ErrorCodes } from '../protocol/errorCodes.js';
import { RpcError } from '../protocol/rpcError.js';
import { classifyMessage } from '../protocol/schemas/jsonrpc.js';
import { MAX_JSON_DEPTH, jsonDepth, shallowJson } from './jsonDepth.js';
import { serializeMessage } from './ndjson.js';

/** An inbound message that breaks the protocol (bad JSON, bad envelope, bad params of a notification…). */
export interface ProtocolViolation {
  /** `ParseError`, `InvalidRequest`, `InvalidMessage` or `MethodNotFound` from {@link ErrorCodes}. */
  code: number;
  reason: string;
}

/** How a {@link JsonRpcPeer} talks to the outside world. */
export interface PeerOptions {
  /** Write one serialized NDJSON line (already newline-terminated). */
  send(line: string): void;
  /** Called for every inbound message that breaks the protocol; the owner decides what it costs. */
  onViolation(violation: ProtocolViolation): void;
  /**
   * Called when handling an inbound message threw something that is not an {@link RpcError}: a
   * request handler (the peer answered -32603), a notification handler, or the dispatch itself.
   * The peer never lets such an exception escape into the stream that fed the line.
   */
  onHandlerError?(method: string, error: unknown): void;
  /**
   * Most levels of arrays and objects an inbound message may nest (default {@link MAX_JSON_DEPTH}).
   * A deeper request is answered with `QuotaExceeded` (`data.limit: "maxJsonDepth"`), any other
   * deeper message is a violation; nothing of it is parsed beyond its envelope.
   */
  maxDepth?: number;
  /** A request refused for its depth, before any handler saw it (params are cut to their first level). */
  onRequestTooDeep?(method: string, params: unknown, error: RpcError): void;
  /** A notification with no handler: ignored (default) or reported as a violation. */
  unknownNotifications?: 'ignore' | 'violation';
  /**
   * Also answer a line that is not JSON (-32700) or not a valid request (-32600) with an error
   * response (id null), as JSON-RPC servers do. Runners do; the host does not (it fails the run).
   */
  answerInvalid?: boolean;
}

/** Per-call options of {@link JsonRpcPeer.request}. */
export interface RequestOptions {
  /** Reject with `RunnerUnresponsive` when no answer came in this many ms. */
  timeoutMs?: number;
  /** Reject with `RequestCancelled` when aborted. The late answer is ignored. */
  signal?: AbortSignal;
  /**
   * Called synchronously when the answer's line arrives, before any later line is handled (the
   * promise settles only after a few microtasks, by which time later lines may have been read).
   */
  onAnswerLine?(): void;
}

type Handler = (params: unknown) => unknown;

/**
 * One side of a JSON-RPC 2.0 connection over NDJSON, built on json-rpc-2.0.
 *
 * Every inbound message is classified and its params (or result) parsed with the method's zod
 * schema before a handler sees it; invalid params of a request are answered with -32602, any
 * other invalid inbound message is reported through `onViolation`. Handlers that throw
 * something other than an {@link RpcError} are answered with -32603 and a generic message, so
 * internal error text never leaks to the peer. {@link close} rejects every pending request.
 */
export class JsonRpcPeer {
  private readonly rpc: JSONRPCServerAndClient;
  private readonly notificationHandlers = new Map<string, Handler>();
  private readonly pendingRejects = new Set<(error: RpcError) => void>();
  private closedWith: RpcError | undefined;
  /** Ids we give our requests (so a request's id is known the moment it is sent). */
  private lastId = 0;
  private readonly answerLineHooks = new Map<number, () => void>();

  constructor(private readonly options: PeerOptions) {
    const server = new JSONRPCServer({
      // Our handler wrapper reports unexpected errors itself; what reaches the library is only
      // the deliberate error answers (JSONRPCErrorException), which are not failures.
      errorListener: (message, data) => {
        if (!(data instanceof JSONRPCErrorException)) this.options.onHandlerError?.(message, data);
      },
    });
    const client = new JSONRPCClient(
      (payload) => this.write(payload),
      () => ++this.lastId,
    );
    this.rpc = new JSONRPCServerAndClient(server, client, {
      errorListener: (message, data) => this.options.onHandlerError?.(message, data),
    });
  }

  /** True once {@link close} was called. */
  get closed(): boolean {
    return this.closedWith !== undefined;
  }

  /** Number of requests we sent that have no answer yet. */
  get pendingCount(): number {
    return this.pendingRejects.size;
  }

  /** Answer `method` requests: params are parsed with `schema` first. */
  onRequest<S extends z.ZodType>(method: string, schema: S, handler: (params: z.output<S>) => unknown): void {
    this.rpc.addMethod(method, async (raw: unknown) => {
      const parsed = schema.safeParse(raw ?? {});
      if (!parsed.success) throw toException(RpcError.invalidParams(method, parsed.error));
      try {
        return (await handler(parsed.data)) ?? {};
      } catch (error) {
        if (error instanceof RpcError) throw toException(error);
        this.options.onHandlerError?.(method, error);
        throw toException(RpcError.internal());
      }
    });
  }

  /** Handle `method` notifications: params are parsed with `schema` first; invalid ones are violations. */
  onNotification<S extends z.ZodType>(method: string, schema: S, handler: (params: z.output<S>) => void): void {
    this.notificationHandlers.set(method, (raw) => {
      const parsed = schema.safeParse(raw ?? {});
      if (!parsed.success) {
        const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
        this.options.onViolation({ code: ErrorCodes.InvalidMessage, reason: `invalid ${method} params: ${issues}` });
        return;
      }
      handler(parsed.data);
    });
  }

  /** Send a request and parse its result with `resultSchema`. Rejects with an {@link RpcError}. */
  request<S extends z.ZodType>(
    method: string,
    params: unknown,
    resultSchema: S,
    options: RequestOptions = {},
  ): Promise<z.output<S>> {
    if (this.closedWith) return Promise.reject(this.closedWith);
    if (options.signal?.aborted)
      return Promise.reject(RpcError.requestCancelled(String(options.signal.reason ?? 'aborted')));
    return new Promise<z.output<S>>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      let id: number | undefined;
      const onAbort = () => settle(RpcError.requestCancelled(String(options.signal?.reason ?? 'aborted')));
      const settle = (error: RpcError | undefined, value?: z.output<S>) => {
        if (!this.pendingRejects.delete(rejectFn)) return;
        if (id !== undefined) this.answerLineHooks.delete(id);
        if (timer) clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        if (error) reject(error);
        else resolve(value as z.output<S>);
      };
      const rejectFn = (error: RpcError) => settle(error);
      this.pendingRejects.add(rejectFn);
      options.signal?.addEventListener('abort', onAbort, { once: true });
      if (options.timeoutMs !== undefined) {
        // A loop stalled past the limit runs this timer before it reads the input already waiting: read it first
        // (the poll phase comes before setImmediate's), so an answer sent in time is not called late.
        const expire = () =>
          settle(new RpcError(ErrorCodes.RunnerUnresponsive, `${method} got no answer within ${options.timeoutMs} ms`));
        timer = setTimeout(() => setImmediate(expire), options.timeoutMs);
        timer.unref();
      }
      const sent = this.rpc.request(method, params as never, undefined);
      id = this.lastId; // assigned synchronously by request() above
      if (options.onAnswerLine) this.answerLineHooks.set(id, options.onAnswerLine);
      Promise.resolve(sent).then(
        (raw: unknown) => {
          const parsed = resultSchema.safeParse(raw);
          if (parsed.success) return settle(undefined, parsed.data);
          const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
          const error = new RpcError(ErrorCodes.InvalidMessage, `invalid ${method} result: ${issues}`);
          settle(error);
          this.options.onViolation({ code: ErrorCodes.InvalidMessage, reason: error.message });
        },
        (error: unknown) => settle(fromLibraryError(error)),
      );
    });
  }

  /** Send a notification. Dropped silently after {@link close}. */
  notify(method: string, params: unknown): void {
    if (this.closedWith) return;
    this.write({ jsonrpc: '2.0', method, params });
  }

  /** Feed one inbound NDJSON line. */
  receiveLine(line: Buffer | string): void {
    // Measured before parsing, without recursion: a deep value would overflow every recursive
    // walk after the parser (stringify, clone, redaction) and SQLite's JSON checks (issue 11).
    const maxDepth = this.options.maxDepth ?? MAX_JSON_DEPTH;
    if (jsonDepth(line, maxDepth) > maxDepth) {
      this.refuseTooDeep(typeof line === 'string' ? line : line.toString('utf8'), maxDepth);
      return;
    }
    let value: unknown;
    try {
      value = JSON.parse(typeof line === 'string' ? line : line.toString('utf8'));
    } catch {
      const text = (typeof line === 'string' ? line : line.toString('utf8')).slice(0, 120);
      this.reportInvalid(ErrorCodes.ParseError, `not JSON: ${JSON.stringify(text)}`, 'Parse error');
      return;
    }
    this.receive(value);
  }

  /** Feed one already parsed inbound message. */
  receive(value: unknown): void {
    if (this.closedWith) return;
    const msg = classifyMessage(value);
    switch (msg.kind) {
      case 'invalid':
        this.reportInvalid(ErrorCodes.InvalidRequest, msg.reason, 'Invalid Request');
        return;
      case 'notification': {
        const handler = this.notificationHandlers.get(msg.message.method);
        if (handler) {
          try {
            handler(msg.message.params);
          } catch (error) {
            this.options.onHandlerError?.(msg.message.method, error);
          }
        } else if (this.options.unknownNotifications === 'violation') {
          this.options.onViolation({
            code: ErrorCodes.MethodNotFound,
            reason: `unknown notification ${msg.message.method}`,
          });
        }
        return;
      }
      case 'response': {
        const id = (msg.message as { id?: unknown }).id;
        const hook = typeof id === 'number' ? this.answerLineHooks.get(id) : undefined;
        if (hook) {
          this.answerLineHooks.delete(id as number);
          hook();
        }
        void this.rpc.receiveAndSend(msg.message, undefined, undefined).catch((error: unknown) => {
          this.options.onHandlerError?.('receive', error);
        });
        return;
      }
      case 'request':
        // Requests go to the server (which answers MethodNotFound itself), responses to the client.
        void this.rpc.receiveAndSend(msg.message, undefined, undefined).catch((error: unknown) => {
          this.options.onHandlerError?.('receive', error);
        });
        return;
    }
  }

  /** Close the connection: every pending request rejects with `error`, later calls fail with it. */
  close(error: RpcError): void {
    if (this.closedWith) return;
    this.closedWith = error;
    for (const reject of [...this.pendingRejects]) reject(error);
    this.rpc.rejectAllPendingRequests(error.message);
  }

  /** A message nested deeper than allowed: refuse it by its envelope alone. */
  private refuseTooDeep(text: string, maxDepth: number): void {
    if (this.closedWith) return;
    const reason = `nests deeper than ${maxDepth} levels of arrays and objects (protocol limit maxJsonDepth)`;
    let envelope: unknown;
    try {
      envelope = JSON.parse(shallowJson(text, 2));
    } catch {
      envelope = undefined;
    }
    const msg = classifyMessage(envelope);
    if (msg.kind === 'request') {
      const { id, method, params } = msg.message as { id: string | number; method: string; params?: unknown };
      const error = new RpcError(ErrorCodes.QuotaExceeded, `${method}: the request ${reason}`, {
        limit: 'maxJsonDepth',
        maxDepth,
      });
      this.options.onRequestTooDeep?.(method, params, error);
      this.write({ jsonrpc: '2.0', id, error: { code: error.code, message: error.message, data: error.data } });
      return;
    }
    const what =
      msg.kind === 'notification'
        ? `a ${msg.message.method} notification`
        : msg.kind === 'response'
          ? `the answer to request ${JSON.stringify((msg.message as { id?: unknown }).id)}`
          : 'a message';
    this.options.onViolation({ code: ErrorCodes.InvalidMessage, reason: `${what} ${reason}` });
  }

  private reportInvalid(code: number, reason: string, message: string): void {
    if (this.options.answerInvalid)
      this.write({ jsonrpc: '2.0', id: null, error: { code, message, data: { reason } } });
    this.options.onViolation({ code, reason });
  }

  private write(payload: unknown): void {
    if (this.closedWith) return;
    this.options.send(serializeMessage(payload));
  }
}

function toException(error: RpcError): JSONRPCErrorException {
  return new JSONRPCErrorException(error.message, error.code, error.data);
}

function fromLibraryError(error: unknown): RpcError {
  if (error instanceof RpcError) return error;
  if (error instanceof JSONRPCErrorException) return new RpcError(error.code, error.message, error.data);
  return new RpcError(ErrorCodes.InternalError, error instanceof Error ? error.message : String(error));
}
