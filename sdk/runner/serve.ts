import type { Readable, Writable } from 'node:stream';
import { z } from 'zod';
import { ErrorCodes } from '../protocol/errorCodes.js';
import { RpcError } from '../protocol/rpcError.js';
import { ModelDeltaParamsSchema } from '../protocol/schemas/hostRequests.js';
import { InitializeParamsSchema } from '../protocol/schemas/initialize.js';
import {
  CancelParamsSchema,
  RunMessageParamsSchema,
  RunParamsSchema,
  RunResultSchema,
  ShutdownParamsSchema,
} from '../protocol/schemas/run.js';
import type { RunParams, RunResult } from '../protocol/types.js';
import { PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from '../protocol/version.js';
import { createRunnerLogger, type Logger } from '../logger.js';
import { attachPeer, lineWriter } from '../transport/attach.js';
import { DEFAULT_MAX_LINE_BYTES } from '../transport/ndjson.js';
import { JsonRpcPeer } from '../transport/peer.js';
import { createRunContext, type DeltaRoutes } from './context.js';
import { MessageSlot } from './messageSlot.js';
import type { RunnerDefinition, RunReturn } from './defineRunner.js';

/** Options of {@link serve}; the defaults serve on the process's own stdin/stdout. */
export interface ServeOptions {
  input?: Readable;
  output?: Writable;
  /** Exit the process when the connection ends. Default: true when serving on process stdio. */
  exitProcess?: boolean;
  logger?: Logger;
  maxLineBytes?: number;
}

/**
 * Serve `runner` over NDJSON JSON-RPC (docs/protocol.md). Answers `initialize`, `run` (one at a
 * time; a second concurrent `run` gets `RunnerBusy`), `run/cancel` and `shutdown`. Resolves when
 * the connection ends: after `shutdown`, or when the input closes (an active run is aborted).
 *
 * On process stdio, `console.log/info/debug` are redirected to stderr, because stdout carries
 * the protocol only.
 */
export function serve<S extends z.ZodType>(runner: RunnerDefinition<S>, options: ServeOptions = {}): Promise<void> {
  const onProcessStdio = options.input === undefined;
  const input = options.input ?? process.stdin;
  const output = options.output ?? process.stdout;
  const exitProcess = options.exitProcess ?? onProcessStdio;
  const log = options.logger ?? createRunnerLogger(runner.manifest.name);
  if (onProcessStdio) redirectConsoleToStderr();

  let initialized = false;
  let active: { runId: string; controller: AbortController; messages: MessageSlot; open: boolean } | undefined;
  const deltaRoutes: DeltaRoutes = new Map();

  const peer = new JsonRpcPeer({
    send: lineWriter(output),
    onViolation: (v) => log.warn({ code: v.code }, `protocol violation from host: ${v.reason}`),
    onHandlerError: (method, error) => log.error({ err: error, method }, 'request handler failed'),
    unknownNotifications: 'ignore',
    answerInvalid: true,
  });

  let resolveDone!: () => void;
  const done = new Promise<void>((resolve) => (resolveDone = resolve));
  let finished = false;
  const finish = (why: string) => {
    if (finished) return;
    finished = true;
    active?.controller.abort(new Error(why));
    peer.close(RpcError.connectionClosed(why));
    detach();
    output.end(() => {
      resolveDone();
      if (exitProcess) process.exit(0);
    });
  };

  peer.onRequest('initialize', InitializeParamsSchema, (params) => {
    if (!SUPPORTED_PROTOCOL_VERSIONS.includes(params.protocolVersion)) {
      throw new RpcError(
        ErrorCodes.ProtocolVersionUnsupported,
        `protocol version ${params.protocolVersion} is not supported; this runner speaks ` +
          `${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}`,
        { supported: SUPPORTED_PROTOCOL_VERSIONS },
      );
    }
    initialized = true;
    return {
      protocolVersion: PROTOCOL_VERSION,
      runner: { name: runner.manifest.name, version: runner.manifest.version },
      capabilities: { cancel: true, resume: runner.manifest.resume ?? false, append: runner.manifest.append ?? false },
    };
  });

  peer.onRequest('run', RunParamsSchema, async (params) => {
    if (!initialized) throw new RpcError(ErrorCodes.InvalidRequest, 'run before initialize');
    if (active) throw new RpcError(ErrorCodes.RunnerBusy, `runner is busy with run ${active.runId}`);
    const run = { runId: params.run.runId, controller: new AbortController(), messages: new MessageSlot(), open: true };
    active = run;
    try {
      return await executeRun(runner, params, run, log.child({ runId: params.run.runId }), peer, deltaRoutes);
    } finally {
      run.open = false;
      active = undefined;
    }
  });

  // A message for a run that is not this runner's active one is refused, never an error: the host runs it later.
  peer.onRequest('run/message', RunMessageParamsSchema, (params) => {
    const run = active;
    if (run?.runId !== params.runId) return { accepted: false, reason: `run ${params.runId} is not active` };
    return run.messages.deliver(params.event, params.goalRevision, () => run.open && !run.controller.signal.aborted);
  });

  peer.onNotification('run/cancel', CancelParamsSchema, (params) => {
    if (active?.runId === params.runId) active.controller.abort(new Error(params.reason ?? 'cancelled by host'));
  });
  peer.onNotification('model/delta', ModelDeltaParamsSchema, (params) =>
    deltaRoutes.get(params.streamId)?.(params.text),
  );

  peer.onRequest('shutdown', ShutdownParamsSchema, () => {
    // Answer first; finish() ends the output after the answer was written.
    setImmediate(() => finish('shutdown requested'));
    return {};
  });

  const detach = attachPeer(
    peer,
    input,
    (code, reason) => {
      log.error({ code }, reason);
      finish(reason);
    },
    { maxLineBytes: options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES, onEnd: () => finish('input closed') },
  );
  return done;
}

async function executeRun(
  runner: RunnerDefinition<z.ZodType>,
  params: RunParams,
  run: { controller: AbortController; messages: MessageSlot; open: boolean },
  log: Logger,
  peer: JsonRpcPeer,
  deltaRoutes: DeltaRoutes,
): Promise<RunResult> {
  const { controller } = run;
  const ctx = createRunContext({
    peer,
    runInfo: params.run,
    resume: params.resume,
    signal: controller.signal,
    log,
    deltaRoutes,
    isOpen: () => run.open,
    messages: run.messages,
  });
  try {
    let config: unknown = params.binding.config;
    if (runner.configSchema) {
      const parsed = runner.configSchema.safeParse(params.binding.config);
      if (!parsed.success) {
        return {
          status: 'failed',
          error: { code: 'invalid_config', message: `invalid runner config: ${z.prettifyError(parsed.error)}` },
        };
      }
      config = parsed.data;
    }
    const returned = await runner.run(params.event, { ...params.binding, config }, ctx);
    const result = normalizeResult(returned);
    // Cancellation is a result: whatever run() made of it, an aborted run reports `cancelled`.
    return controller.signal.aborted ? { ...result, status: 'cancelled' } : result;
  } catch (error) {
    if (controller.signal.aborted) {
      return {
        status: 'cancelled',
        error: { code: 'cancelled', message: String((controller.signal.reason as Error)?.message ?? 'cancelled') },
      };
    }
    log.error({ err: error }, 'run failed');
    return {
      status: 'failed',
      error: { code: 'runner_error', message: error instanceof Error ? error.message : String(error) },
    };
  } finally {
    run.open = false;
  }
}

/** Turn what `run()` returned into a valid RunResult (an invalid one becomes a failed run). */
export function normalizeResult(returned: RunReturn): RunResult {
  if (returned === undefined) return { status: 'completed' };
  if (typeof returned === 'string')
    return { status: 'completed', output: { parts: [{ type: 'text', text: returned }] } };
  const parsed = RunResultSchema.safeParse(returned);
  if (parsed.success) return parsed.data;
  return {
    status: 'failed',
    error: { code: 'invalid_result', message: `runner returned an invalid result: ${z.prettifyError(parsed.error)}` },
  };
}

let consoleRedirected = false;
function redirectConsoleToStderr(): void {
  if (consoleRedirected) return;
  consoleRedirected = true;
  // An accidental console.log would corrupt the protocol stream; keep it, on stderr.
  const toStderr = (...args: unknown[]) => console.error(...args);
  console.log = toStderr;
  console.info = toStderr;
  console.debug = toStderr;
}
