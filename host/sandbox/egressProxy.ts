import { lookup } from 'node:dns/promises';
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { BlockList, connect, isIP, type Socket } from 'node:net';
import { chmodSync, rmSync } from 'node:fs';

/** Addresses a run may reach only when its binding allows private destinations. */
const PRIVATE = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  PRIVATE.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['::ffff:0:0', 96],
] as const)
  PRIVATE.addSubnet(net, prefix, 'ipv6');

/** Is this address loopback, private, link-local, multicast or otherwise not public? */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  return family === 0 || PRIVATE.check(address, family === 6 ? 'ipv6' : 'ipv4');
}

/** One egress decision, for the audit trail. */
export interface EgressDecision {
  allowed: boolean;
  host: string;
  port: number;
  address?: string;
  method: string;
  reason: string;
}

/** Policy of one run's egress. */
export interface EgressPolicy {
  /** `host`, `host:port`, `*.domain` or `*.domain:port`; a bare host allows ports 80 and 443. */
  allow: string[];
  /** Let allowed names resolve to private, loopback or link-local addresses. */
  allowPrivate: boolean;
}

function allowedByList(host: string, port: number, allow: string[]): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return allow.some((entry) => {
    const [pattern, p] = entry.toLowerCase().split(/:(?=\d+$)/) as [string, string | undefined];
    const portOk = p ? Number(p) === port : port === 80 || port === 443;
    const nameOk = pattern.startsWith('*.')
      ? name.endsWith(pattern.slice(1)) && name.length > pattern.length - 1
      : name === pattern;
    return portOk && nameOk;
  });
}

/**
 * Decide one destination: allowlist first, then resolve the name here (the runner never
 * resolves anything) and refuse private ranges unless granted. Returns the address to use.
 */
export async function decideEgress(
  host: string,
  port: number,
  policy: EgressPolicy,
  method: string,
): Promise<EgressDecision> {
  const base = { host, port, method };
  if (!Number.isInteger(port) || port < 1 || port > 65535) return { ...base, allowed: false, reason: 'bad port' };
  if (!allowedByList(host, port, policy.allow))
    return { ...base, allowed: false, reason: "not on the binding's egress allowlist" };
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : (await lookup(host, { all: true })).map((a) => a.address);
  } catch (error) {
    return { ...base, allowed: false, reason: `cannot resolve: ${(error as NodeJS.ErrnoException).code ?? 'error'}` };
  }
  // Every address must pass: a name with one public and one private address is refused.
  if (!policy.allowPrivate && addresses.some(isPrivateAddress))
    return { ...base, allowed: false, address: addresses[0], reason: 'resolves to a private or loopback address' };
  return { ...base, allowed: true, address: addresses[0], reason: 'allowed' };
}

/**
 * The host end of a run's only network door: an HTTP proxy (CONNECT and plain absolute-URI
 * requests) listening on a Unix socket that is bound into the sandbox.
 */
export async function startEgressProxy(
  socketPath: string,
  policy: EgressPolicy,
  onDecision: (d: EgressDecision) => void,
): Promise<{ close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  // The handlers are async (DNS); a throw inside one (e.g. onDecision) must end that request, not
  // become an unhandled rejection that takes the host down.
  const onRequest = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    let url: URL;
    try {
      url = new URL(req.url ?? '');
    } catch {
      res.writeHead(400).end('absolute URL required');
      return;
    }
    const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    const decision =
      url.protocol === 'http:'
        ? await decideEgress(url.hostname, port, policy, req.method ?? 'GET')
        : {
            allowed: false,
            host: url.hostname,
            port,
            method: req.method ?? 'GET',
            reason: 'only http:// is proxied in the clear; use CONNECT for https',
          };
    onDecision(decision);
    if (!decision.allowed) {
      res.writeHead(403, { 'content-type': 'text/plain' }).end(`paddock egress: ${decision.reason}\n`);
      return;
    }
    const upstream = httpRequest(
      {
        host: decision.address,
        port,
        method: req.method,
        path: `${url.pathname}${url.search}`,
        headers: { ...req.headers, host: url.host },
      },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  };
  const server: Server = createServer((req, res) => {
    onRequest(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
  });
  const onConnect = async (req: IncomingMessage, client: Socket, head: Buffer): Promise<void> => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => undefined);
    const [host = '', portText = ''] = (req.url ?? '').split(/:(?=\d+$)/);
    const decision = await decideEgress(host.replace(/^\[|\]$/g, ''), Number(portText), policy, 'CONNECT');
    onDecision(decision);
    if (!decision.allowed) {
      client.end(`HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\n\r\npaddock egress: ${decision.reason}\n`);
      return;
    }
    const upstream = connect(Number(portText), decision.address!, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
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
    close: () =>
      new Promise<void>((resolve) => {
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
