// What GET /v1/spend and GET /v1/skills answer (docs/http-api.md "Console endpoints"), and the spend in words.

/** One model's calls of the last 24 h. */
export interface ModelSpend {
  model: string;
  calls: number;
  failedCalls: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
}

/** One binding's spend of the last 24 h, what its calls in flight hold, and its day budgets. */
export interface BindingSpend {
  binding: string;
  stored: boolean;
  calls: number;
  tokens: number;
  costUsd: number;
  reserved: { calls: number; tokens: number; costUsd: number };
  budget: { tokensPerDay: number | null; costPerDayUsd: number | null };
}

/** The answer of GET /v1/spend. */
export interface SpendAnswer {
  tenant: string;
  at: string;
  since: string;
  models: ModelSpend[];
  bindings: BindingSpend[];
}

/** One skill of GET /v1/skills. */
export interface SkillState {
  id: string;
  digest: string | null;
  name: string | null;
  version: string | null;
  recordedAt: string | null;
  changed: { digest: string; at: string; runId: string } | null;
}

/** A cost in dollars: cents when a dollar or more, four decimals below (a test model's calls cost fractions). */
export function usd(n: number): string {
  return n === 0 ? '$0' : n >= 1 ? `$${n.toFixed(2)}` : `$${n.toFixed(4)}`;
}

/** "1,234 tokens" in the viewer's locale. */
export function tokens(n: number): string {
  return `${n.toLocaleString()} ${n === 1 ? 'token' : 'tokens'}`;
}
