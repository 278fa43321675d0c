import type { Logger } from 'pino';
import { HOST_METHODS, type HostMethodName, type ResultOf } from '../protocol/methods.js';
import { UpdateSchema } from '../protocol/schemas/updates.js';
import type {
  ApprovalRequestParams,
  Effect,
  JsonValue,
  ModelCompleteParams,
  Resume,
  RunInfo,
  UpdateInput,
} from '../protocol/types.js';
import type { JsonRpcPeer } from '../transport/peer.js';
import type { MessageHandler, MessageSlot } from './messageSlot.js';

/** Typed calls to host requests, scoped to the current run. All reject with an `RpcError`. */
export interface HostCalls {
  state: {
    get(key: string): Promise<ResultOf<'state/get'>>;
    set(key: string, value: JsonValue): Promise<void>;
    delete(key: string): Promise<boolean>;
  };
  model: {
    /** Call a granted model. `onDelta` receives streamed text while the call is pending. */
    complete(
      params: Omit<ModelCompleteParams, 'runId' | 'streamId'>,
      options?: { onDelta?: (text: string) => void },
    ): Promise<ResultOf<'model/complete'>>;
  };
  kb: { retrieve(knowledgeBase: string, query: string, topK?: number): Promise<ResultOf<'kb/retrieve'>> };
  tools: {
    /** The tools of a granted MCP server this run may call, with their input schemas. */
    list(server: string): Promise<ResultOf<'tool/list'>>;
    call(server: string, tool: string, args?: Record<string, unknown>): Promise<ResultOf<'tool/call'>>;
  };
  fs: {
    read(path: string, options?: { encoding?: 'utf8' | 'base64'; maxBytes?: number }): Promise<ResultOf<'fs/read'>>;
    write(
      path: string,
      content: string,
      options?: { encoding?: 'utf8' | 'base64'; mode?: 'create' | 'overwrite' | 'append' },
    ): Promise<ResultOf<'fs/write'>>;
  };
  approval: {
    request(
      action: { effect: Effect; target: string; summary: string },
      scope?: ApprovalRequestParams['scope'],
    ): Promise<ResultOf<'approval/request'>>;
  };
}

/** Everything `run()` gets besides the event and the binding. */
export interface RunContext extends HostCalls {
  /** Run id, session id, goal revision, attempt and deadline. */
  readonly run: RunInfo;
  /** Host-owned pointers from earlier runs and a recovery summary, when there are any. */
  readonly resume: Resume | undefined;
  /** Aborts when the host cancels the run or shuts the runner down. */
  readonly signal: AbortSignal;
  /** A pino logger on fd 2, bound to this run. */
  readonly log: Logger;
  /** Stream one update to the host. Validated here; throws on an invalid update. */
  emit(update: UpdateInput): void;
  /**
   * Take user messages that arrive while this run runs (the binding's steering `append`; the runner's manifest must
   * set `append: true`, docs/protocol.md "Messages during a run"). Without a handler, or when it returns `false`, the
   * host runs the message as an ordinary later run. Returns the function that stops taking them.
   */
  onMessage(handler: MessageHandler): () => void;
}

/** Streams of `model/delta` notifications, keyed by stream id, owned by the serving loop. */
export type DeltaRoutes = Map<string, (text: string) => void>;

/** Build the context of one run. `send` notifies the host; calls are bound to `runInfo.runId`. */
export function createRunContext(args: {
  peer: JsonRpcPeer;
  runInfo: RunInfo;
  resume: Resume | undefined;
  signal: AbortSignal;
  log: Logger;
  deltaRoutes: DeltaRoutes;
  isOpen: () => boolean;
  messages: MessageSlot;
}): RunContext {
  const { peer, runInfo, signal, deltaRoutes } = args;
  const runId = runInfo.runId;
  let seq = 0;
  let streams = 0;
  const call = <M extends HostMethodName>(method: M, params: Record<string, unknown>) =>
    peer.request(method, { runId, ...params }, HOST_METHODS[method].result, { signal }) as Promise<ResultOf<M>>;

  return {
    run: runInfo,
    resume: args.resume,
    signal,
    log: args.log,
    emit(update) {
      const parsed = UpdateSchema.parse(update);
      if (!args.isOpen()) {
        args.log.warn({ kind: parsed.kind }, 'update emitted after the run ended; dropped');
        return;
      }
      seq += 1;
      peer.notify('run/update', { runId, seq, update: parsed });
    },
    state: {
      get: (key) => call('state/get', { key }),
      set: async (key, value) => {
        await call('state/set', { key, value });
      },
      delete: async (key) => (await call('state/delete', { key })).deleted,
    },
    model: {
      async complete(params, options) {
        if (!options?.onDelta) return call('model/complete', params);
        streams += 1;
        const streamId = `${runId}:${streams}`;
        deltaRoutes.set(streamId, options.onDelta);
        try {
          return await call('model/complete', { ...params, streamId });
        } finally {
          deltaRoutes.delete(streamId);
        }
      },
    },
    kb: { retrieve: (knowledgeBase, query, topK) => call('kb/retrieve', { knowledgeBase, query, topK }) },
    tools: {
      list: (server) => call('tool/list', { server }),
      call: (server, tool, args2 = {}) => call('tool/call', { server, tool, arguments: args2 }),
    },
    fs: {
      read: (path, options = {}) => call('fs/read', { path, ...options }),
      write: (path, content, options = {}) => call('fs/write', { path, content, ...options }),
    },
    approval: { request: (action, scope = 'once') => call('approval/request', { action, scope }) },
    onMessage: (handler) => args.messages.set(handler),
  };
}
