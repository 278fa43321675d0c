import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { connect, type Socket } from 'node:net';
import { chmodSync, rmSync } from 'node:fs';
import { ByteBudget, decodeForScan, MAX_BUFFERED_BODY_BYTES_PER_RUN, readScannableBody } from './egressBody.js';
import {
  decideEgress,
  destinationOf,
  type EgressDecision,
  type EgressGate,
  type EgressPolicy,
  type EgressRefusal,
} from './egressDecision.js';

/** Most connections one run holds open to its egress proxy at once (tunnels included). */
export const MAX_EGRESS_CONNECTIONS_PER_RUN = 64;
/** How long a request's head, and the whole request, may take to arrive at the proxy. */
export const EGRESS_HEADERS_TIMEOUT_MS = 10_000;
export const EGRESS_REQUEST_TIMEOUT_MS = 30_000;

/** A run's egress proxy: closed with the run; its gate set once the run's policy is open. */
export interface EgressProxy {
  /** Put the run's policy over every destination and every plain-HTTP request (docs/approvals.md §6). */
  setGate(gate: EgressGate): void;
  close(): Promise<void>;
}

/** The request line and headers of a plain-HTTP request, as the scan reads them (a secret may ride in any). */
function headText(req: IncomingMessage): string {
  const lines = [`${req.method ?? ''} ${req.url ?? ''}`];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
  return lines.join('\n');
}

/**
 * The host end of a run's only network door: an HTTP proxy (CONNECT and plain absolute-URI requests) listening on a
 * Unix socket that is bound into the sandbox. With a gate, the run's policy decides every destination (and may ask
 * a person), a plain-HTTP request holding a secret value the host knows is refused before a byte of it leaves, and
 * a tunnel is closed at the chunk that completes a known value (docs/approvals.md §6). `timeouts`: how long a
 * request's head and the whole request may take to arrive (tests shorten them).
 */
export async function startEgressProxy(
  socketPath: string,
  policy: EgressPolicy,
  onDecision: (d: EgressDecision) => void,
  timeouts: { headersMs: number; requestMs: number } = {
    headersMs: EGRESS_HEADERS_TIMEOUT_MS,
    requestMs: EGRESS_REQUEST_TIMEOUT_MS,
  },
): Promise<EgressProxy> {
  const sockets = new Set<Socket>();
  let gate: EgressGate | undefined;
  // What the run's requests hold for scanning at once, over all its connections.
  const budget = new ByteBudget(MAX_BUFFERED_BODY_BYTES_PER_RUN);
  // Aborted at close: an ask waiting for a person ends with the run (its approval is void).
  const closing = new AbortController();
  const refusedBy = (base: Omit<EgressDecision, 'allowed' | 'reason'>, r: EgressRefusal): EgressDecision => ({
    ...base,
    allowed: false,
    reason: r.message,
    deniedBy: r.deniedBy,
  });

  // The handlers are async (DNS, approvals); a throw inside one (e.g. onDecision) must end that request, not
  // become an unhandled rejection that takes the host down.
  const onRequest = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    let url: URL;
    try {
      url = new URL(req.url ?? '');
    } catch {
      res.writeHead(400).end('absolute URL required');
      return;
    }
    const method = req.method ?? 'GET';
    const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const base = { host, port, method };
    const refuse = (decision: EgressDecision, status = 403) => {
      onDecision(decision);
      res.writeHead(status, { 'content-type': 'text/plain' }).end(`paddock egress: ${decision.reason}\n`);
    };
    if (url.protocol !== 'http:') {
      refuse({ ...base, allowed: false, reason: 'only http:// is proxied in the clear; use CONNECT for https' });
      return;
    }
    // What leaves is read and scanned before the destination is decided: a request that carries a secret is
    // refused without asking anybody, and nothing of it is resolved or sent.
    let body: Buffer | undefined;
    const path = `${url.pathname}${url.search}`;
    const headers = { ...req.headers, host: url.host };
    if (gate) {
      const read = await readScannableBody(req, budget);
      if ('refused' in read) {
        refuse({ ...base, allowed: false, reason: read.refused }, read.status);
        return;
      }
      // Held until the request is done (answered, refused or broken off).
      res.on('close', () => budget.give(read.raw.length));
      // Decoded and scanned in this one synchronous step: one inflated copy exists at a time.
      const decoded = decodeForScan(read.raw, req.headers['content-encoding']);
      if ('refused' in decoded) {
        refuse({ ...base, allowed: false, reason: decoded.refused }, 415);
        return;
      }
      // Both the request as the runner wrote it and as it will be sent (header names lower-cased, the URL parsed:
      // an outside attack wrote a secret as an upper-case header name, and a host name percent-encoded); the host
      // names also without case, as a resolver reads them.
      const sent = [`${method} ${path}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${String(v)}`)].join('\n');
      const text = `${headText(req)}\n${sent}\n\n${decoded.text}`;
      const refusal = gate.outbound(text, destinationOf(host, port), [url.hostname]);
      if (refusal) {
        refuse(refusedBy(base, refusal));
        return;
      }
      body = read.raw;
    }
    const decision = await decideEgress(host, port, policy, method, gate, closing.signal);
    if (!decision.allowed) {
      refuse(decision);
      return;
    }
    onDecision(decision);
    const upstream = httpRequest(
      {
        host: decision.address,
        port,
        method,
        path,
        headers,
      },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    upstream.on('error', () => res.writeHead(502).end());
    if (body) upstream.end(body);
    else req.pipe(upstream);
  };
  const server: Server = createServer(
    // A request must arrive whole in time (its head in 10 s, all of it in 30 s: the runner's side is loopback in the
    // host): a request trickled a byte at a time is answered 408 and its connection closed (an outside attack held
    // 400 of them open for a whole run).
    {
      headersTimeout: timeouts.headersMs,
      requestTimeout: timeouts.requestMs,
      // Node checks those every 30 s by default; a second keeps the bound what it says.
      connectionsCheckingInterval: 1_000,
    },
    (req, res) => {
      onRequest(req, res).catch(() => {
        if (!res.headersSent) res.writeHead(502);
        res.end();
      });
    },
  );
  // One run holds at most this many connections to its proxy; more are refused at accept.
  server.maxConnections = MAX_EGRESS_CONNECTIONS_PER_RUN;
  const onConnect = async (req: IncomingMessage, client: Socket, head: Buffer): Promise<void> => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => undefined);
    const [hostText = '', portText = ''] = (req.url ?? '').split(/:(?=\d+$)/);
    const host = hostText.replace(/^\[|\]$/g, '');
    const port = Number(portText);
    const deny = (decision: EgressDecision) => {
      onDecision(decision);
      client.end(`HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\n\r\npaddock egress: ${decision.reason}\n`);
    };
    // A tunnel's name is no secret's place: spelled into a host name (in any case), a secret would leave by DNS.
    const destination = destinationOf(host, port);
    const named = gate?.outbound(headText(req), destination, [host]);
    if (named) {
      deny(refusedBy({ host, port, method: 'CONNECT' }, named));
      return;
    }
    const decision = await decideEgress(host, port, policy, 'CONNECT', gate, closing.signal);
    if (!decision.allowed) {
      deny(decision);
      return;
    }
    onDecision(decision);
    if (client.destroyed) return;
    // What the runner sends through the tunnel is scanned chunk by chunk before it is passed on: a tunnel is mostly
    // TLS (nothing to read), but nothing makes it so, and an outside attack sent a cleartext request through one.
    const scan = gate?.tunnel(destination);
    // Runs in a socket's 'data' listener, where a throw (the run's journal closed under it) would reach the
    // process: whatever goes wrong ends this tunnel, never the host.
    const forward = (chunk: Buffer): boolean => {
      try {
        const refusal = scan?.(chunk.toString('latin1'));
        if (refusal) {
          onDecision(refusedBy({ host, port, method: 'CONNECT' }, refusal));
          throw new Error(refusal.message);
        }
      } catch {
        client.destroy();
        upstream.destroy();
        return false;
      }
      if (!upstream.write(chunk)) client.pause();
      return true;
    };
    const upstream = connect(port, decision.address!, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0 && !forward(head)) return;
      upstream.pipe(client);
      client.on('data', forward);
      client.on('end', () => upstream.end());
      upstream.on('drain', () => client.resume());
    });
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    upstream.on('error', () => client.destroy());
  };
  server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    onConnect(req, client, head).catch(() => client.destroy());
  });
  rmSync(socketPath, { force: true });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(socketPath, resolve));
  chmodSync(socketPath, 0o666); // the sandbox's uid must be able to connect
  return {
    setGate: (g) => {
      gate = g;
    },
    close: () =>
      new Promise<void>((resolve) => {
        closing.abort();
        for (const s of sockets) s.destroy();
        // Plain http:// requests in flight (their upstream never answering) would hold close() forever.
        server.closeAllConnections();
        server.close(() => {
          rmSync(socketPath, { force: true });
          resolve();
        });
      }),
  };
}
