// Where one proxied connection may go: the run's policy (or, without one, the binding's egress list) names the
// destination, then the host resolves it and refuses private ranges unless granted. Nothing is resolved before the
// destination is allowed, so a name a runner makes up never reaches a DNS server unasked.
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { domainMatch, normalDomain } from '../policy/globMatch.js';

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
  /** Who refused it, when the run's policy did (`binding rule 2`, `host default`, `outbound secret scan`, …). */
  deniedBy?: string;
}

/** Policy of one run's egress. */
export interface EgressPolicy {
  /** `host`, `host:port`, `*.domain` or `*.domain:port`; a bare host allows ports 80 and 443. */
  allow: string[];
  /** Let allowed names resolve to private, loopback or link-local addresses. */
  allowPrivate: boolean;
}

/** A refusal by the run's policy: who, and what they said. */
export interface EgressRefusal {
  deniedBy: string;
  message: string;
}

/**
 * The run's policy over its egress (host/policy/runPolicy.ts): set once the run's policy is open. Absent, the
 * binding's list alone decides and nothing is scanned.
 */
export interface EgressGate {
  /** Decide a destination (as {@link destinationOf} names it); may wait for a person. Undefined: it may go. */
  destination(destination: string, method: string, signal: AbortSignal): Promise<EgressRefusal | undefined>;
  /**
   * What a request carries out (a plain-HTTP request's line, headers and body; a tunnel's bytes): refused when it
   * holds a known secret. `names` (the host names it goes to) are compared without case, as a resolver reads them.
   */
  outbound(text: string, destination: string, names?: string[]): EgressRefusal | undefined;
  /**
   * A scanner of what a tunnel to `destination` carries out, chunk by chunk (Latin-1 text): a refusal ends the
   * tunnel. Bytes of earlier chunks have left by then (docs/approvals.md §6).
   */
  tunnel(destination: string): (chunk: string) => EgressRefusal | undefined;
}

/** A destination as the policy names it: `host`, or `host:port` for a port other than 80 and 443. */
export function destinationOf(host: string, port: number): string {
  return normalDomain(host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`);
}

/**
 * Decide one destination: the run's policy (or the binding's list) first, then resolve the name here (the runner
 * never resolves anything) and refuse private ranges unless granted. Returns the address to use.
 */
export async function decideEgress(
  host: string,
  port: number,
  policy: EgressPolicy,
  method: string,
  gate?: EgressGate,
  signal: AbortSignal = new AbortController().signal,
): Promise<EgressDecision> {
  const base = { host, port, method };
  if (!Number.isInteger(port) || port < 1 || port > 65535 || host === '')
    return { ...base, allowed: false, reason: 'bad destination' };
  const destination = destinationOf(host, port);
  if (gate) {
    const refusal = await gate.destination(destination, method, signal);
    if (refusal) return { ...base, allowed: false, reason: refusal.message, deniedBy: refusal.deniedBy };
  } else if (!policy.allow.some((entry) => domainMatch(entry, destination)))
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
