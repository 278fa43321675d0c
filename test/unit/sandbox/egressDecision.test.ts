// One proxied destination's decision: the run's gate (or the binding's list) before any name is resolved, then the
// private-address rule. A name nobody allowed is never looked up.
import { describe, expect, it } from 'vitest';
import { decideEgress, destinationOf, type EgressGate } from '../../../host/sandbox/egressDecision.js';

/** A gate that records what it was asked and answers as told. */
function gate(refuse: boolean): EgressGate & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    destination: async (destination) => {
      asked.push(destination);
      return refuse ? { deniedBy: 'binding rule 1', message: `no ${destination}` } : undefined;
    },
    outbound: () => undefined,
    tunnel: () => () => undefined,
  };
}

describe('destinationOf', () => {
  it('names a destination as the policy does: the web ports bare, any other port written, IPv6 in brackets', () => {
    expect(destinationOf('Example.COM.', 443)).toBe('example.com');
    expect(destinationOf('example.com', 80)).toBe('example.com');
    expect(destinationOf('example.com', 8443)).toBe('example.com:8443');
    expect(destinationOf('::1', 8080)).toBe('[::1]:8080');
    expect(destinationOf('::1', 443)).toBe('[::1]');
  });
});

describe('decideEgress', () => {
  const open = { allow: ['*.invalid:8443', 'listed.invalid'], allowPrivate: false };

  it('a refusal of the gate is final, with who refused: the name is not resolved', async () => {
    const g = gate(true);
    const d = await decideEgress('secret-name.invalid', 443, open, 'CONNECT', g);
    expect(g.asked).toEqual(['secret-name.invalid']);
    expect(d).toMatchObject({ allowed: false, reason: 'no secret-name.invalid', deniedBy: 'binding rule 1' });
    expect(d.address).toBeUndefined();
  });

  it('an allowed name is resolved next (.invalid never resolves), the gate deciding instead of the list', async () => {
    const g = gate(false);
    const d = await decideEgress('unlisted.invalid', 22, open, 'CONNECT', g);
    expect(g.asked).toEqual(['unlisted.invalid:22']);
    expect(d).toMatchObject({ allowed: false, reason: expect.stringMatching(/^cannot resolve: /) });
  });

  it('without a gate, the list decides with ports: a bare name is 80 and 443 only', async () => {
    const refused = "not on the binding's egress allowlist";
    expect((await decideEgress('listed.invalid', 22, open, 'GET')).reason).toBe(refused);
    expect((await decideEgress('a.invalid', 443, open, 'GET')).reason).toBe(refused);
    expect((await decideEgress('a.invalid', 8443, open, 'GET')).reason).toMatch(/^cannot resolve: /);
    expect((await decideEgress('listed.invalid', 443, open, 'GET')).reason).toMatch(/^cannot resolve: /);
  });

  it('refuses a bad port or an empty name before anything else', async () => {
    const g = gate(false);
    for (const [host, port] of [
      ['a.invalid', 0],
      ['a.invalid', 65_536],
      ['a.invalid', Number.NaN],
      ['', 443],
    ] as const)
      expect(await decideEgress(host, port, open, 'GET', g)).toMatchObject({
        allowed: false,
        reason: 'bad destination',
      });
    expect(g.asked).toEqual([]);
  });

  it('a literal private address is refused unless allowPrivate, after the gate allowed it', async () => {
    expect(await decideEgress('127.0.0.1', 8080, open, 'GET', gate(false))).toMatchObject({
      allowed: false,
      reason: 'resolves to a private or loopback address',
    });
    expect(await decideEgress('127.0.0.1', 8080, { ...open, allowPrivate: true }, 'GET', gate(false))).toMatchObject({
      allowed: true,
      address: '127.0.0.1',
    });
  });
});
