// What GET /v1/spend and GET /v1/skills answer (docs/http-api.md "Console endpoints"), and the spend in words.

// The answer's types are the host's own (type-only: nothing of the host reaches the bundle).
import type { TenantSpend } from '../../host/admin/spend.js';
export type { BindingSpend, ModelSpend } from '../../host/admin/spend.js';

/** The answer of GET /v1/spend. */
export type SpendAnswer = TenantSpend;

/** One skill of GET /v1/skills. */
export type { SkillState } from '../../host/state/skillDigests.js';

/** A cost in dollars: cents when a dollar or more, four decimals below (a test model's calls cost fractions). */
export function usd(n: number): string {
  return n === 0 ? '$0' : n >= 1 ? `$${n.toFixed(2)}` : `$${n.toFixed(4)}`;
}

/** "1,234 tokens" in the viewer's locale. */
export function tokens(n: number): string {
  return `${n.toLocaleString()} ${n === 1 ? 'token' : 'tokens'}`;
}
