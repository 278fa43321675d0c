// A real HTTP server (node:http on 127.0.0.1, an ephemeral port) serving the SSE streams of a store the way
// the server's routes do: the start seq checked first (400 with every problem), then the stream.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EventStreams, parseStartSeq, type EventStreamsOptions } from '../../host/api/streams/index.js';
import type { Store } from '../../host/state/store.js';

/** The test server: its base URL, its streams, and how to close it. */
export interface StreamServer {
  url: (path: string) => string;
  streams: EventStreams;
  server: Server;
  /** Resolves once every response served so far has closed (the server side of each stream is over). */
  settled: () => Promise<void>;
  close: () => Promise<void>;
}

/** Serve `/sessions/:id/events` and `/runs/:id/events` of `store`. */
export async function streamServer(store: Store, options: EventStreamsOptions = {}): Promise<StreamServer> {
  const streams = new EventStreams(store, options);
  const responses: Promise<void>[] = [];
  const server = createServer((req, res) => {
    responses.push(new Promise((resolve) => res.once('close', () => resolve())));
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const m = /^\/(sessions|runs)\/([^/]+)\/events$/.exec(url.pathname);
    const afters = url.searchParams.getAll('after');
    const start = parseStartSeq({
      lastEventId: req.headers['last-event-id'],
      after: afters.length === 0 ? undefined : afters.length === 1 ? afters[0] : afters,
    });
    const answer = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (!m) return answer(404, { code: 'not_found' });
    if (!start.ok) return answer(400, { code: 'invalid_request', errors: start.errors });
    const runId = m[1] === 'runs' ? m[2]! : undefined;
    const sessionId = runId === undefined ? m[2]! : store.run(runId)?.sessionId;
    if (sessionId === undefined) return answer(404, { code: 'not_found' });
    streams.serve(res, { sessionId, runId, afterSeq: start.afterSeq }, { 'x-request-id': 'req-test' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    streams,
    server,
    settled: async () => {
      await Promise.all(responses);
    },
    close: async () => {
      streams.endAll();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
