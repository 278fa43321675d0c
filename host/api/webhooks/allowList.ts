/** `serve --webhook-allow`: which resolved addresses (and ports) webhook deliveries may reach. */
import { isIP } from 'node:net';
import { HostError } from '../../errors.js';

/** One allow-list entry: an address range, or a host name the admin trusts (whatever its DNS answers). */
export type AllowEntry =
  | { kind: 'cidr'; family: 4 | 6; bits: bigint; prefix: number; port?: number; text: string }
  | { kind: 'name'; name: string; port?: number; text: string };

/** A parsed allow list. */
export interface WebhookAllowList {
  entries: AllowEntry[];
}

/** The default: loopback only. */
export const DEFAULT_WEBHOOK_ALLOW = '127.0.0.0/8,::1';

const NAME = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

/** An address as a 32- or 128-bit integer; IPv4-mapped IPv6 (`::ffff:a.b.c.d`) is its IPv4 address. */
export function addressBits(address: string): { family: 4 | 6; bits: bigint } | undefined {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return addressBits(mapped[1]!);
  const family = isIP(address);
  if (family === 4) {
    const bits = address.split('.').reduce((acc, octet) => (acc << 8n) | BigInt(Number(octet)), 0n);
    return { family: 4, bits };
  }
  if (family !== 6) return undefined;
  const [head, tail] = address.includes('::') ? address.split('::') : [address, undefined];
  const groups = (s: string | undefined) => (s ? s.split(':') : []);
  let left = groups(head);
  let right = groups(tail);
  // A trailing dotted quad is two groups.
  const expand = (g: string[]) =>
    g.flatMap((x) => {
      if (!x.includes('.')) return [x];
      const v4 = addressBits(x)!.bits;
      return [(v4 >> 16n).toString(16), (v4 & 0xffffn).toString(16)];
    });
  left = expand(left);
  right = expand(right);
  const all =
    tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  const bits = all.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n);
  const v4mapped = bits >> 32n === 0xffffn;
  return v4mapped ? { family: 4, bits: bits & 0xffffffffn } : { family: 6, bits };
}

function parseEntry(raw: string): AllowEntry | string {
  const text = raw.trim();
  let host = text;
  let port: number | undefined;
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (bracketed) {
    host = bracketed[1]!;
    if (bracketed[2] !== undefined) port = Number(bracketed[2]);
  } else if ((text.match(/:/g) ?? []).length === 1) {
    const [h, p] = text.split(':');
    host = h!;
    if (!/^\d+$/.test(p!)) return `"${text}": the port must be a number`;
    port = Number(p);
  }
  if (port !== undefined && !(port >= 1 && port <= 65535)) return `"${text}": the port must be 1-65535`;
  const [address, prefixText] = host.split('/');
  const parsed = addressBits(address!);
  if (parsed) {
    const max = parsed.family === 4 ? 32 : 128;
    const prefix = prefixText === undefined ? max : Number(prefixText);
    if (!/^\d+$/.test(prefixText ?? '0') || prefix > max) return `"${text}": the prefix must be 0-${max}`;
    return { kind: 'cidr', family: parsed.family, bits: parsed.bits, prefix, port, text };
  }
  const name = host.toLowerCase();
  if (prefixText !== undefined || !NAME.test(name)) return `"${text}": not an address, a range (a.b.c.d/n) or a name`;
  return { kind: 'name', name, port, text };
}

/** Parse `host[:port],…` (hosts: a name, an address or an address range); every bad entry named at once. */
export function parseWebhookAllow(spec: string = DEFAULT_WEBHOOK_ALLOW): WebhookAllowList {
  const parts = spec.split(',').filter((p) => p.trim() !== '');
  const results = parts.map(parseEntry);
  const errors = results.filter((r): r is string => typeof r === 'string');
  if (errors.length > 0 || parts.length === 0)
    throw new HostError(
      'INVALID_INPUT',
      `--webhook-allow: ${errors.length ? errors.join('; ') : 'name at least one host'}`,
      { field: 'webhook-allow', errors },
    );
  return { entries: results as AllowEntry[] };
}

/** Whether `address`:`port` is allowed for a URL whose host name is `urlHost`. */
export function allows(list: WebhookAllowList, urlHost: string, address: string, port: number): boolean {
  const parsed = addressBits(address);
  if (!parsed) return false;
  return list.entries.some((e) => {
    if (e.port !== undefined && e.port !== port) return false;
    if (e.kind === 'name') return e.name === urlHost.toLowerCase();
    if (e.family !== parsed.family) return false;
    const width = BigInt(e.family === 4 ? 32 : 128);
    const shift = width - BigInt(e.prefix);
    return parsed.bits >> shift === e.bits >> shift;
  });
}

/** The list as text, for error messages. */
export function describeAllow(list: WebhookAllowList): string {
  return list.entries.map((e) => e.text).join(', ');
}
