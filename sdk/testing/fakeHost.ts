import type { z } from 'zod';
import type { HostMethodName } from '../protocol/methods.js';
import { RpcError } from '../protocol/rpcError.js';
import { buildRunParams, textEvent } from '../protocol/runParams.js';
import type {
  WireBindingInput,
  ChatEventInput,
  InitializeResult,
  JsonValue,
  Resume,
  RunResult,
  Update,
} from '../protocol/types.js';
import type { RunnerDefinition } from '../runner/defineRunner.js';
import { attachPeer, lineWriter } from '../transport/attach.js';
import { HostEndpoint } from '../transport/hostEndpoint.js';
import type { ProtocolViolation } from '../transport/peer.js';
import { inProcessRunner, type RunnerTransport } from './transports.js';

/** A stub answer to a host request; throw an `RpcError` to refuse. */
export type FakeHostHandler = (params: Record<string, unknown>) => unknown;

/** Options of {@link createFakeHost}. */
export interface FakeHostOptions {
  /** Answers per host request method. `state/*` default to an in-memory store. */
  handlers?: Partial<Record<HostMethodName, FakeHostHandler>>;
  /** Methods the run is granted. Default: every method that has a handler (incl. the state defaults). */
  grants?: HostMethodName[];
  /** Start from this transport instead of serving `runner` in process (e.g. a spawned process). */
  transport?: RunnerTransport;
}

/** What one fake run produced. */
export interface FakeRunReport {
  result: RunResult;
  updates: Update[];
  /** Protocol violations by the runner (must be empty for a correct runner). */
  violations: ProtocolViolation[];
}

/** Input of {@link FakeHost.run}: a text message, or a whole event, plus binding parts. */
export interface FakeRunInput {
  text?: string;
  event?: Partial<ChatEventInput>;
  config?: Record<string, unknown>;
  binding?: Partial<WireBindingInput>;
  resume?: Resume;
  /** Abort to send `run/cancel`. */
  signal?: AbortSignal;
}

/** An in-process host to unit-test a runner: the same checks as the real host, stub services. */
export interface FakeHost {
  readonly runner: InitializeResult;
  /** The in-memory runner state the `state/*` defaults read and write. */
  readonly state: Map<string, JsonValue>;
  run(input?: FakeRunInput): Promise<FakeRunReport>;
  /** Send `shutdown` and wait until the runner has ended. */
  shutdown(): Promise<void>;
}

let runCounter = 0;

/**
 * Start a fake host for `runner` (served in process) and complete the handshake. Runner →
 * host requests pass the same run-scope and grant checks as in the real host; `state/*` use an
 * in-memory map; other methods answer `NotSupported` unless `options.handlers` stubs them.
 */
export async function createFakeHost<S extends z.ZodType>(
  runner: RunnerDefinition<S> | undefined,
  options: FakeHostOptions = {},
): Promise<FakeHost> {
  const transport = options.transport ?? (runner ? inProcessRunner(runner) : undefined);
  if (!transport) throw new TypeError('createFakeHost needs a runner or options.transport');
  const state = new Map<string, JsonValue>();
  const handlers: Partial<Record<HostMethodName, FakeHostHandler>> = {
    'state/get': (p) =>
      state.has(String(p.key)) ? { found: true, value: state.get(String(p.key)) } : { found: false },
    'state/set': (p) => void state.set(String(p.key), p.value as JsonValue),
    'state/delete': (p) => ({ deleted: state.delete(String(p.key)) }),
    ...options.handlers,
  };
  const grants = options.grants ?? (Object.keys(handlers) as HostMethodName[]);
  let collect: { updates: Update[]; violations: ProtocolViolation[] } | undefined;
  const violations: ProtocolViolation[] = [];

  const endpoint = new HostEndpoint({
    send: lineWriter(transport.input),
    host: { name: 'paddock-fake-host', version: '0.0.0' },
    onViolation: (v) => (collect?.violations ?? violations).push(v),
    onUpdate: (params) => collect?.updates.push(params.update),
    hostRequests: {
      handle: async (method, params) => {
        const handler = handlers[method];
        if (!handler) throw RpcError.notSupported(method, 'fake host');
        return (await handler(params)) ?? {};
      },
    },
  });
  attachPeer(endpoint.peer, transport.output, (code, reason) => violations.push({ code, reason }), {
    maxLineBytes: 16 * 1024 * 1024,
    onLine: (bytes) => endpoint.noteLineBytes(bytes),
    onEnd: () => endpoint.close(RpcError.runnerExited('runner output ended')),
  });
  const info = await endpoint.initialize(10_000);

  return {
    runner: info,
    state,
    async run(input = {}) {
      const runId = `run_fake-${++runCounter}`;
      const params = buildRunParams({
        runId,
        sessionId: 'ses_fake',
        event: textEvent(input.text ?? 'hello', { platform: 'fake', bot: 'fake-bot', ...input.event }),
        binding: {
          bindingId: 'b_fake',
          runner: { id: info.runner.name },
          config: input.config ?? {},
          hostRequests: grants,
          ...input.binding,
        },
        resume: input.resume,
        wallClockMs: 600_000,
      });
      collect = { updates: [], violations: [] };
      const current = collect;
      const onAbort = () =>
        endpoint.cancel(runId, String((input.signal?.reason as Error | undefined)?.message ?? 'cancelled'));
      input.signal?.addEventListener('abort', onAbort, { once: true });
      if (input.signal?.aborted) onAbort();
      try {
        const result = await endpoint.run(params);
        return { result, updates: current.updates, violations: current.violations };
      } finally {
        input.signal?.removeEventListener('abort', onAbort);
        endpoint.endRun();
        collect = undefined;
      }
    },
    async shutdown() {
      await endpoint.shutdown(5_000).catch(() => undefined);
      transport.input.end();
      await transport.exited;
    },
  };
}
