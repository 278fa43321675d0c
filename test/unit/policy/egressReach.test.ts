// When a binding's runs get the egress proxy: a listed destination, or a policy that can allow one off the list.
import { describe, expect, it } from 'vitest';
import type { PolicyRule } from '../../../host/policy/actions.js';
import { egressBeyondList, wantsEgressProxy } from '../../../host/policy/egressReach.js';

const binding = (egress: string[], approvalPolicy: 'ask' | 'deny', policy: PolicyRule[] = []) => ({
  network: { egress },
  approvalPolicy,
  policy,
});
const rule = (effect: PolicyRule['effect'], decision: PolicyRule['decision'], domain = 'api.example.com') => ({
  effect,
  match: { domain },
  decision,
});

describe('egress reach', () => {
  it('nothing listed, nothing askable, no rule allowing a domain: no proxy (no network at all)', () => {
    expect(wantsEgressProxy(binding([], 'deny'))).toBe(false);
    expect(wantsEgressProxy(binding([], 'deny', [rule('network', 'deny'), rule('network', 'ask')]))).toBe(false);
    // A path or command rule opens no network.
    expect(
      wantsEgressProxy(binding([], 'deny', [{ effect: 'exec', match: { command: 'curl *' }, decision: 'allow' }])),
    ).toBe(false);
  });

  it('a listed destination, a person who may approve one, or a rule allowing a domain: the proxy runs', () => {
    expect(wantsEgressProxy(binding(['api.example.com'], 'deny'))).toBe(true);
    expect(egressBeyondList(binding(['api.example.com'], 'deny'))).toBe(false);
    expect(egressBeyondList(binding([], 'ask'))).toBe(true);
    expect(egressBeyondList(binding([], 'deny', [rule('network', 'allow')]))).toBe(true);
    expect(egressBeyondList(binding([], 'deny', [rule('*', 'allow')]))).toBe(true);
    expect(egressBeyondList(binding([], 'deny', [rule('publish', 'allow')]))).toBe(false);
  });
});
