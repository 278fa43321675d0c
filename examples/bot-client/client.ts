// A client of paddock's HTTP API for a bot platform (docs/http-api.md): dispatch a chat event, stream a run's or a
// session's events (resuming with Last-Event-ID after a dropped connection, never yielding an event twice), cancel
// a run. Plain fetch, no dependency.
import { SseParser } from './sse.js';

/** A chat event (docs/protocol.md, ChatEvent): what the platform received. */
export interface ChatEvent {
  /** The platform's id of this event: a redelivery with the same id never runs twice. */
  id: string;
  platform: string;
  bot: string;
  conversation: { type: 'private' | 'group' | 'channel' | 'thread'; id: string; title?: string };
  sender: { id: string; name?: string; isBot?: boolean };
  message: { id?: string; parts: { type: 'text'; text: string }[] };
  /** ISO 8601. */
  receivedAt: string;
}

/** The answer to a dispatch (202). */
export interface Dispatched {
  status: 'started' | 'queued' | 'duplicate';
  runId: string;
  sessionId: string;
  bindingId: string;
  position?: number;
  links: { run: string; runEvents: string; sessionEvents: string };
}

/** One stored event, as the streams carry it. */
export interface PaddockEvent {
  id: string;
  sessionId: string;
  seq: number;
  type: string;
  runId?: string | null;
  at: string;
  data: Record<string, unknown>;
}

/** A refusal: the problem+json paddock answered (`code` is stable: `no_binding`, `not_found`, …). */
export class PaddockError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly problem: Record<string, unknown>,
  ) {
    super(`paddock answered ${status} ${code}: ${typeof problem.detail === 'string' ? problem.detail : ''}`);
  }
}

/** Options of {@link PaddockClient}. */
export interface ClientOptions {
  /** e.g. `http://127.0.0.1:8420` */
  baseUrl: string;
  /** A `platform` token (`paddock tokens create --role platform`). */
  token: string;
  /** How many times a 429 is retried after its Retry-After (default 3). */
  retries?: number;
  /** The longest wait between two stream reconnects, doubling from 250 ms (default 5000). */
  maxReconnectDelayMs?: number;
  /** How many reconnects in a row may fail before `stream` gives up (default 10). */
  maxReconnects?: number;
}

/** What to stream: one run (ends after its terminal event) or a whole session (stays open). */
export type StreamTarget = { runId: string } | { sessionId: string };

const TERMINAL = new Set(['run.ended', 'run.interrupted']);
const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });

/** The client. */
export class PaddockClient {
  private readonly base: string;

  constructor(private readonly options: ClientOptions) {
    this.base = options.baseUrl.replace(/\/+$/, '');
  }

  /** POST /v1/events: route `event` to its binding. A redelivered id answers `duplicate` with the first ids. */
  dispatch(event: ChatEvent): Promise<Dispatched> {
    return this.json<Dispatched>('POST', '/v1/events', event);
  }

  /** POST /v1/runs/:id/cancel. A run that already ended is a PaddockError with code `conflict`. */
  cancel(runId: string, reason?: string): Promise<{ runId: string; requested: boolean }> {
    return this.json('POST', `/v1/runs/${encodeURIComponent(runId)}/cancel`, reason ? { reason } : {});
  }

  /** GET /v1/runs/:id: the run's status and outcome. */
  run(runId: string): Promise<Record<string, unknown>> {
    return this.json('GET', `/v1/runs/${encodeURIComponent(runId)}`);
  }

  /**
   * The events of a run or a session, in order, each once. A connection that drops (or a server that stops) is
   * reopened with `Last-Event-ID` = the last seq yielded, so the stream picks up exactly where it was; a run's
   * stream ends after its `run.ended` / `run.interrupted`. `after` starts after that seq; `signal` stops it (so
   * does leaving the `for await` loop).
   */
  async *stream(
    target: StreamTarget,
    options: { after?: number; signal?: AbortSignal } = {},
  ): AsyncGenerator<PaddockEvent> {
    const path =
      'runId' in target
        ? `/v1/runs/${encodeURIComponent(target.runId)}/events`
        : `/v1/sessions/${encodeURIComponent(target.sessionId)}/events`;
    let last = options.after ?? 0;
    let failures = 0;
    while (!options.signal?.aborted) {
      const connection = new AbortController();
      const stop = () => connection.abort();
      options.signal?.addEventListener('abort', stop, { once: true });
      try {
        const res = await this.send('GET', path, undefined, connection.signal, {
          accept: 'text/event-stream',
          ...(last > 0 ? { 'last-event-id': String(last) } : {}),
        });
        if (res.status >= 500) throw new Error(`paddock answered ${res.status}`); // stopping: reconnect later
        if (!res.ok) throw await problemOf(res); // 4xx: reconnecting would not help
        // A parser per connection: a message half-received when the connection broke is dropped, and sent again.
        const parser = new SseParser();
        const decoder = new TextDecoder();
        for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
          for (const message of parser.feed(decoder.decode(chunk, { stream: true }))) {
            const event = JSON.parse(message.data) as PaddockEvent;
            if (event.seq <= last) continue; // already yielded: never twice
            last = event.seq;
            failures = 0;
            yield event;
            if ('runId' in target && TERMINAL.has(event.type)) return;
          }
        }
        // The response ended without the run's end: the server stopped its streams. Reopen (counted, so a stream
        // that keeps ending with nothing new gives up).
        if (++failures > (this.options.maxReconnects ?? 10)) throw new Error(`${path} keeps ending without events`);
      } catch (error) {
        if (options.signal?.aborted) return; // the caller stopped it
        if (error instanceof PaddockError) throw error;
        if (++failures > (this.options.maxReconnects ?? 10)) throw error;
      } finally {
        options.signal?.removeEventListener('abort', stop);
        connection.abort(); // closes the connection when the caller leaves the loop early
      }
      await sleep(Math.min(250 * 2 ** failures, this.options.maxReconnectDelayMs ?? 5000), options.signal);
    }
  }

  /** One JSON request; a 429 waits its Retry-After and tries again; a refusal throws its problem. */
  private async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const res = await this.send(method, path, body);
      if (res.status === 429 && attempt < (this.options.retries ?? 3)) {
        await res.body?.cancel();
        await sleep(retryAfterMs(res.headers.get('retry-after')));
        continue;
      }
      if (!res.ok) throw await problemOf(res);
      return (await res.json()) as T;
    }
  }

  private send(
    method: string,
    path: string,
    body?: unknown,
    signal?: AbortSignal,
    headers: Record<string, string> = {},
  ): Promise<Response> {
    return fetch(`${this.base}${path}`, {
      method,
      signal,
      headers: {
        authorization: `Bearer ${this.options.token}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
  }
}

/** Retry-After in seconds (paddock sends seconds); anything else waits one second. At most a minute. */
function retryAfterMs(header: string | null): number {
  const seconds = Number(header);
  return Number.isFinite(seconds) && seconds >= 0 ? Math.min(seconds, 60) * 1000 : 1000;
}

/** The problem+json of a refusal (or what stands in for one, when a proxy answered something else). */
async function problemOf(res: Response): Promise<PaddockError> {
  const text = await res.text();
  let problem: Record<string, unknown> = { detail: text.slice(0, 200) };
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === 'object') problem = parsed as Record<string, unknown>;
  } catch {
    // not JSON: keep the text
  }
  return new PaddockError(res.status, typeof problem.code === 'string' ? problem.code : `http_${res.status}`, problem);
}
