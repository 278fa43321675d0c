// A TCP proxy on loopback between a client and a server, which the test uses to break connections the way a
// network does: all at once, or in the middle of the bytes the server is sending (half an SSE message). It records
// each connection's request and response heads, so a test can see what a reconnect asked for.
import { createServer, connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/** One proxied connection. */
export interface ProxiedConnection {
  /** The client's bytes (the request head and any body), as text. */
  request: string;
  /** The server's bytes so far, as text. */
  response: string;
  client: Socket;
  upstream: Socket;
}

/** The proxy. */
export interface CuttingProxy {
  /** `http://127.0.0.1:<port>` */
  url: string;
  connections: ProxiedConnection[];
  /** Destroy every open connection (both sides). */
  cutAll(): void;
  /** Forward only the next `bytes` bytes the server sends (on any connection), then cut that connection there. */
  cutAfter(bytes: number): void;
  /** Resolves when the server has sent a response whose text matches `pattern` (on any connection). */
  waitForResponse(pattern: RegExp): Promise<ProxiedConnection>;
  close(): Promise<void>;
}

/** A proxy to `target` (a loopback `http://host:port`). */
export async function cuttingProxy(target: string): Promise<CuttingProxy> {
  const { hostname, port } = new URL(target);
  const connections: ProxiedConnection[] = [];
  const waiters: { pattern: RegExp; resolve: (c: ProxiedConnection) => void }[] = [];
  let budget: number | undefined;
  const cut = (c: ProxiedConnection) => {
    c.client.destroy();
    c.upstream.destroy();
  };
  const server = createServer((client) => {
    const upstream = connect(Number(port), hostname);
    const c: ProxiedConnection = { request: '', response: '', client, upstream };
    connections.push(c);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.on('data', (chunk: Buffer) => {
      c.request += chunk.toString('latin1');
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      let out = chunk;
      let cutHere = false;
      if (budget !== undefined) {
        if (chunk.length >= budget) {
          out = chunk.subarray(0, budget);
          cutHere = true;
          budget = undefined;
        } else budget -= chunk.length;
      }
      c.response += out.toString('latin1');
      for (const w of waiters.filter((x) => x.pattern.test(c.response))) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(c);
      }
      // The cut goes after the bytes are flushed, so the client really holds half a message.
      if (cutHere) client.write(out, () => cut(c));
      else client.write(out);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections,
    cutAll: () => connections.forEach(cut),
    cutAfter: (bytes) => (budget = bytes),
    waitForResponse: (pattern) =>
      new Promise((resolve) => {
        const found = connections.find((c) => pattern.test(c.response));
        if (found) resolve(found);
        else waiters.push({ pattern, resolve });
      }),
    close: () => {
      connections.forEach(cut);
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
