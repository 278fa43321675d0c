/** A real loopback HTTP server that answers webhook deliveries as a test scripts it, and records each request. */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** How the target answers one request. */
export type Answer =
  | { status: number; location?: string }
  | 'reset' // destroys the connection without an answer
  | 'hang' // never answers
  | 'endless'; // 200 with a body that never ends

/** One request the target received. */
export interface Received {
  headers: IncomingHttpHeaders;
  body: Buffer;
  path: string;
}

/** Listen on `host` (a loopback address); answers follow `script`, then 204 for every later request. */
export async function webhookTarget(script: Answer[] = [], host = '127.0.0.1') {
  const received: Received[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks), path: req.url ?? '' });
      for (const w of waiters.filter((x) => received.length >= x.n)) w.resolve();
      const answer = script.shift() ?? { status: 204 };
      if (answer === 'reset') req.socket.destroy();
      else if (answer === 'hang') return;
      else if (answer === 'endless') {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        const chunk = Buffer.alloc(64 * 1024, 'x');
        const pump = () => {
          while (!res.destroyed && res.write(chunk));
          if (!res.destroyed) res.once('drain', pump);
        };
        pump();
      } else res.writeHead(answer.status, answer.location ? { location: answer.location } : {}).end('answer');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: `http://${host}:${port}/hooks/paddock?via=test`,
    received,
    /** Resolves once `n` requests arrived in total. */
    arrived: (n: number) =>
      new Promise<void>((resolve) => (received.length >= n ? resolve() : waiters.push({ n, resolve }))),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
