// The approval metrics (docs/approvals.md §8): read from the store at scrape time (host/state/approvalStats.ts), so
// they count what every host process on the data folder recorded, not only this one's.
import { Counter, type Registry } from 'prom-client';
import { APPROVAL_OUTCOMES, approvalStats } from '../../state/approvalStats.js';
import type { Store } from '../../state/store.js';
import { BINDING_ID, CappedLabel } from './labels.js';

/**
 * Register `paddock_approvals_total{binding,outcome}` and `paddock_grants_revoked_after_use_total{binding}` on
 * `registry`. The binding label is capped like the run metrics' (the first `maxBindings` well-formed ids read, in
 * tenant then binding order; the rest are summed as `other`); every tenant is counted (`/metrics` is the operator's).
 */
export function registerApprovalMetrics(store: Store, registry: Registry, maxBindings: number): void {
  const registers = [registry];
  const binding = new CappedLabel(BINDING_ID, maxBindings);
  // Both counters of one scrape read the store once: a read younger than this is reused.
  let last: { at: number; rows: ReturnType<typeof label> } | undefined;
  const label = () =>
    approvalStats(store, { median: false })
      .map((s) => ({ ...s, label: binding.value(s.bindingId) }))
      .sort((a, b) => a.label.localeCompare(b.label));
  const read = () => {
    const now = Date.now();
    if (!last || now - last.at > 250) last = { at: now, rows: label() };
    return last.rows;
  };
  new Counter({
    name: 'paddock_approvals_total',
    help:
      'Actions the approval flow answered, by binding and outcome: asked (a person was asked), approved, denied, ' +
      'expired, void (of those asked), auto_allowed_by_grant, allowed_by_policy, denied_by_policy (answered at once).',
    labelNames: ['binding', 'outcome'] as const,
    registers,
    collect() {
      this.reset();
      for (const s of read())
        for (const outcome of APPROVAL_OUTCOMES) this.inc({ binding: s.label, outcome }, s.outcomes[outcome]);
    },
  });
  new Counter({
    name: 'paddock_grants_revoked_after_use_total',
    help: 'Capability grants revoked after they allowed at least one action, by binding.',
    labelNames: ['binding'] as const,
    registers,
    collect() {
      this.reset();
      for (const s of read()) this.inc({ binding: s.label }, s.grantsRevokedAfterUse);
    },
  });
}
