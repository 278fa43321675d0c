import type { ServerResponse } from 'node:http';
import { TERMINAL_RUN_EVENTS } from '../../state/events.js';
import type { Store } from '../../state/store.js';
import { readEventsAfter, terminalSeqOfRun } from '../../state/streamReads.js';
import type { CommitWatcher } from './commitWatcher.js';
import { PumpScheduler } from './pumpScheduler.js';
import { HEARTBEAT, SSE_HEADERS, sseMessage } from './sseFrame.js';

/** What one stream sends: a session's events (of one run only, when `runId` is given) after `afterSeq`. */
export interface StreamTarget {
  sessionId: string;
  /** A run stream: only this run's events, and the response ends after its terminal event. */
  runId?: string;
  afterSeq: number;
}

/** Bounds of one stream (docs/http-api.md, SSE). */
export interface StreamLimits {
  /** Interval of the `: hb` comment. */
  heartbeatMs: number;
  /** Above this many bytes buffered for the socket, the stream stops reading the store until 'drain'. */
  maxBufferedBytes: number;
  /** A client that has not drained within this many ms is disconnected (it reconnects with Last-Event-ID). */
  stallMs: number;
  /** Events read from the store at a time. */
  batchSize: number;
}

/** The defaults of {@link StreamLimits}. */
export const DEFAULT_STREAM_LIMITS: StreamLimits = {
  heartbeatMs: 15_000,
  maxBufferedBytes: 1024 * 1024,
  stallMs: 30_000,
  batchSize: 500,
};

/** How a stream ended: `end` (the run ended, or the server ended it), `client` (it left); the rest destroyed it. */
export type StreamEnd = 'end' | 'client' | 'stalled' | 'error';

/** What the caller holds of an open stream. */
export interface EventStreamHandle {
  /** End the response cleanly (server stop). */
  end(): void;
  /** The seq of the last event written. */
  readonly cursor: number;
}

/**
 * Serve one SSE stream on a raw response: headers, every stored event after the start seq, then
 * every event committed later, read from the store after the cursor. Only the cursor decides what
 * is written (the watcher only wakes the stream), so there is no gap and no duplicate, in seq order,
 * whatever the timing of commits, wakes and reconnects. Everything the stream holds (watch, timers,
 * listeners) is released when the response closes, however it closes.
 */
export function serveEventStream(
  res: ServerResponse,
  target: StreamTarget,
  deps: {
    store: Store;
    watcher: CommitWatcher;
    /** Shared by a server's streams, so their reads take turns within a time slice per event-loop turn. */
    scheduler?: PumpScheduler;
    limits?: Partial<StreamLimits>;
    /** Extra response headers (the request id: a hijacked Fastify reply sends no hook's headers). */
    headers?: Record<string, string>;
    /** Told once, when the stream is over. */
    onEnd?: (how: StreamEnd, error?: unknown) => void;
  },
): EventStreamHandle {
  const limits = { ...DEFAULT_STREAM_LIMITS, ...deps.limits };
  const { store } = deps;
  const scheduler = deps.scheduler ?? new PumpScheduler();
  let cursor = target.afterSeq;
  let over = false;
  let paused = false;
  let stallTimer: NodeJS.Timeout | undefined;
  let heartbeat: NodeJS.Timeout | undefined;
  let unwatch = () => {};

  const finish = (how: StreamEnd, error?: unknown) => {
    if (over) return;
    over = true;
    scheduler.cancel(pump);
    unwatch();
    clearInterval(heartbeat);
    clearTimeout(stallTimer);
    res.off('drain', onDrain);
    res.off('close', onClose);
    if (how === 'end') res.end();
    else if (how !== 'client') res.destroy();
    deps.onEnd?.(how, error);
  };
  const onClose = () => finish('client');
  const onDrain = () => {
    if (!paused) return;
    paused = false;
    clearTimeout(stallTimer);
    schedule();
  };

  function pump() {
    if (over || paused) return;
    let events;
    // The batch goes out in one write (one syscall, not one per event), cut where the buffer bound is reached.
    let chunk = '';
    const flush = () => {
      if (chunk) res.write(chunk);
      chunk = '';
    };
    try {
      events = readEventsAfter(store, { ...target, afterSeq: cursor, limit: limits.batchSize });
      for (const event of events) {
        chunk += sseMessage(event);
        cursor = event.seq;
        if (target.runId !== undefined && TERMINAL_RUN_EVENTS.includes(event.type)) {
          flush();
          return finish('end');
        }
        if (res.writableLength + chunk.length > limits.maxBufferedBytes) {
          flush();
          // The rest of the batch is dropped and read again after 'drain': memory holds one batch at most.
          paused = true;
          stallTimer = setTimeout(() => finish('stalled'), limits.stallMs).unref();
          return;
        }
      }
      flush();
    } catch (error) {
      return finish('error', error); // a store that closed or failed: the client reconnects and catches up
    }
    if (events.length === limits.batchSize) schedule(); // more may wait: a later turn, so other work interleaves
  }
  // Wakes coalesce into one read per turn of the scheduler, however many events were committed meanwhile.
  function schedule() {
    if (!over) scheduler.schedule(pump);
  }

  res.writeHead(200, { ...SSE_HEADERS, ...deps.headers });
  res.flushHeaders();
  res.on('close', onClose);
  res.on('drain', onDrain);
  // Kept after the end (finish is idempotent): an 'error' on the response must never go unheard.
  res.on('error', onClose);
  heartbeat = setInterval(() => {
    if (!paused && !over) res.write(HEARTBEAT);
  }, limits.heartbeatMs).unref();

  const handle: EventStreamHandle = {
    end: () => finish('end'),
    get cursor() {
      return cursor;
    },
  };
  try {
    // Watch before the first read: a commit between the two wakes the stream, which then reads from its cursor.
    unwatch = deps.watcher.watch(target.sessionId, schedule);
  } catch (error) {
    finish('error', error); // the store is closing (server stop)
    return handle;
  }
  if (res.destroyed) finish('client');
  else if (target.runId !== undefined && runEndedBy(store, target.runId, target.afterSeq))
    finish('end'); // the client already has the run's end: nothing more will come
  else schedule();
  return handle;
}

function runEndedBy(store: Store, runId: string, seq: number): boolean {
  try {
    return (terminalSeqOfRun(store, runId) ?? Infinity) <= seq;
  } catch {
    return false; // the store failed: the first read fails too, and ends the stream as an error
  }
}
