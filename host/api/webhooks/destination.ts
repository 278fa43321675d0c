/** Where a webhook URL may be sent: its scheme, and its address resolved once and checked against the allow list. */
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { allows, describeAllow, type WebhookAllowList } from './allowList.js';

/** Resolves a host name to every address (node:dns/promises lookup with `all: true`); injectable for tests. */
export type Resolve = (hostname: string) => Promise<{ address: string; family: number }[]>;

/** The system resolver (what `getaddrinfo` answers: /etc/hosts, DNS). */
export const systemResolve: Resolve = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/** A destination the host may connect to: the URL and the one address it resolved to. */
export interface Destination {
  url: URL;
  /** The URL's host without IPv6 brackets. */
  hostname: string;
  port: number;
  address: string;
  family: 4 | 6;
}

/** Why a URL is refused, permanently (no request is sent, no retry). */
export class DestinationRefused extends Error {}

/** Check a URL's shape (registration and delivery): http(s), no credentials, at most 2048 characters. */
export function checkWebhookUrl(text: string): URL {
  if (text.length > 2048) throw new DestinationRefused('the URL is longer than 2048 characters');
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new DestinationRefused('not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new DestinationRefused(`the URL's scheme must be http or https, not ${url.protocol.slice(0, -1)}`);
  if (url.username || url.password) throw new DestinationRefused('the URL must not carry a user name or password');
  return url;
}

/**
 * Resolve a webhook URL once and check every address it resolved to against the allow list (a name that
 * resolves to one allowed and one other address is refused: the connection could reach either). The caller
 * connects to `address` only, so a DNS answer that changes between check and connect (rebinding) is never used.
 * Throws {@link DestinationRefused} for a refusal; a resolver failure is thrown as is (it may be transient).
 */
export async function resolveDestination(
  text: string,
  allow: WebhookAllowList,
  resolve: Resolve = systemResolve,
): Promise<Destination> {
  const url = checkWebhookUrl(text);
  const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  const addresses = isIP(hostname) ? [{ address: hostname, family: isIP(hostname) }] : await resolve(hostname);
  if (addresses.length === 0) throw new DestinationRefused(`${hostname} resolved to no address`);
  const refused = addresses.filter((a) => !allows(allow, hostname, a.address, port));
  if (refused.length > 0) {
    const resolved = isIP(hostname) ? '' : ` (resolved from ${hostname})`;
    throw new DestinationRefused(
      `${refused.map((a) => `${a.address} port ${port}`).join(', ')}${resolved} is outside the webhook allow list ` +
        `(${describeAllow(allow)}); no request was sent`,
    );
  }
  const first = addresses[0]!;
  return { url, hostname, port, address: first.address, family: first.family === 6 ? 6 : 4 };
}
