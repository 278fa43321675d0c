import type { ServerResponse } from 'node:http';
import type { Store } from '../../state/store.js';
import { CommitWatcher, DEFAULT_POLL_MS } from './commitWatcher.js';
import { DEFAULT_SLICE_MS, PumpScheduler } from './pumpScheduler.js';
import {
  serveEventStream,
  type EventStreamHandle,
  type StreamEnd,
  type StreamLimits,
  type StreamTarget,
} from './eventStream.js';

/** Options of {@link EventStreams}: the per-stream bounds and the cross-process poll interval. */
export interface EventStreamsOptions extends Partial<StreamLimits> {
  pollMs?: number;
  /** The longest one event-loop turn of stream reads may take (default 8 ms; see {@link PumpScheduler}). */
  sliceMs?: number;
  /** Told when a stream ends other than cleanly or by its client (a stall, a store error). */
  onStreamEnd?: (how: StreamEnd, target: StreamTarget, error?: unknown) => void;
}

/**
 * The SSE streams of one server (docs/http-api.md, SSE): one {@link CommitWatcher} and one {@link PumpScheduler}
 * shared by every stream, and the set of open streams (their count for `paddock_sse_clients`, their end at stop).
 *
 * Mounting (the server lane): validate the start with `parseStartSeq`, resolve the session (the
 * run's session for a run stream) in the token's tenant, then `reply.hijack()` and
 * `streams.serve(reply.raw, { sessionId, runId?, afterSeq }, { 'x-request-id': … })`.
 * At stop, call {@link endAll} from a `preClose` hook: Fastify's close waits for open connections before its
 * `onClose` hooks run, and a stream never goes idle.
 */
export class EventStreams {
  private readonly watcher: CommitWatcher;
  private readonly scheduler: PumpScheduler;
  private readonly open = new Set<EventStreamHandle>();

  constructor(
    private readonly store: Store,
    private readonly options: EventStreamsOptions = {},
  ) {
    this.watcher = new CommitWatcher(store, options.pollMs ?? DEFAULT_POLL_MS);
    this.scheduler = new PumpScheduler(options.sliceMs ?? DEFAULT_SLICE_MS);
  }

  /** Serve one stream on a raw response (it writes the status line and headers itself). */
  serve(res: ServerResponse, target: StreamTarget, headers?: Record<string, string>): EventStreamHandle {
    // A stream can end inside serveEventStream (a run that already ended), before its handle exists.
    const own: { handle?: EventStreamHandle; endedEarly?: boolean } = {};
    own.handle = serveEventStream(res, target, {
      store: this.store,
      watcher: this.watcher,
      scheduler: this.scheduler,
      limits: this.options,
      headers,
      onEnd: (how, error) => {
        if (own.handle) this.open.delete(own.handle);
        else own.endedEarly = true;
        if (how !== 'end' && how !== 'client') this.options.onStreamEnd?.(how, target, error);
      },
    });
    if (!own.endedEarly) this.open.add(own.handle);
    return own.handle;
  }

  /** Streams open now. */
  get clients(): number {
    return this.open.size;
  }

  /** The shared watcher's state (tests: everything is released when the last stream closes). */
  watcherStats(): ReturnType<CommitWatcher['stats']> {
    return this.watcher.stats();
  }

  /** End every open stream cleanly (server stop: clients reconnect, to this host later or another). */
  endAll(): void {
    for (const handle of [...this.open]) handle.end();
  }
}
