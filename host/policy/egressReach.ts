import type { PolicyRule } from './actions.js';

/** What of a binding decides where its runs may connect. */
export interface EgressReachInput {
  network: { egress: string[] };
  approvalPolicy: 'ask' | 'deny';
  policy: PolicyRule[];
}

/**
 * May a run of this binding reach a destination that is not on its `network.egress` list? Yes when a person may
 * approve one (`approvalPolicy: ask`) or a rule allows a domain. Then the egress proxy runs although the list is empty,
 * and every destination is decided by the run's policy (docs/approvals.md §6).
 */
export function egressBeyondList(binding: EgressReachInput): boolean {
  return (
    binding.approvalPolicy === 'ask' ||
    binding.policy.some(
      (r) => r.match.domain !== undefined && r.decision === 'allow' && (r.effect === 'network' || r.effect === '*'),
    )
  );
}

/** Does a run of this binding need the host's egress proxy (on a backend where it is the only way out)? */
export function wantsEgressProxy(binding: EgressReachInput): boolean {
  return binding.network.egress.length > 0 || egressBeyondList(binding);
}
