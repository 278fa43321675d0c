/**
 * A tenant's model spend of the last 24 h as `GET /v1/spend` answers it (docs/http-api.md "Console endpoints"): per
 * model, and per binding with what its calls in flight reserve and its per-day budgets — the same sums, over the same
 * window, that the gateway checks a binding's day budgets against (docs/gateway.md "Budgets"), but of the tenant's
 * sessions only.
 */
import type { Binding } from '../bindings/schema.js';
import { ConfigRepo } from '../state/configRepo.js';
import { tenantSpend } from '../state/spend.js';
import type { Store } from '../state/store.js';

/** Calls, tokens and cost of one model in the window. */
export interface ModelSpend {
  model: string;
  calls: number;
  failedCalls: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
}

/** One binding's spend in the window, what it holds in flight, and its day budgets. */
export interface BindingSpend {
  binding: string;
  /** False for a binding no longer stored whose calls are still in the window. */
  stored: boolean;
  calls: number;
  tokens: number;
  costUsd: number;
  reserved: { calls: number; tokens: number; costUsd: number };
  budget: { tokensPerDay: number | null; costPerDayUsd: number | null };
}

/** The answer of `GET /v1/spend`. */
export interface TenantSpend {
  tenant: string;
  at: string;
  since: string;
  models: ModelSpend[];
  bindings: BindingSpend[];
}

/** `tenant`'s spend at `now`: every stored binding of it (spent or not) and every binding or model with calls. */
export function spendOfTenant(store: Store, tenant: string, now = new Date()): TenantSpend {
  const { sinceMs, calls, reserved } = tenantSpend(store, tenant, now.getTime());
  const models = new Map<string, ModelSpend>();
  const bindings = new Map<string, BindingSpend>();
  const bindingOf = (id: string, limits?: Binding['limits']): BindingSpend => {
    let b = bindings.get(id);
    if (!b)
      bindings.set(
        id,
        (b = {
          binding: id,
          stored: limits !== undefined,
          calls: 0,
          tokens: 0,
          costUsd: 0,
          reserved: { calls: 0, tokens: 0, costUsd: 0 },
          budget: {
            tokensPerDay: limits?.modelTokensPerDay ?? null,
            costPerDayUsd: limits?.modelCostPerDayUsd ?? null,
          },
        }),
      );
    return b;
  };
  for (const o of new ConfigRepo(store).listOfTenant<Binding>('binding', tenant)) bindingOf(o.id, o.spec.limits ?? {});
  for (const row of calls) {
    const m = models.get(row.modelId) ?? {
      model: row.modelId,
      calls: 0,
      failedCalls: 0,
      inputTokens: 0,
      outputTokens: 0,
      costUsd: 0,
    };
    m.calls += row.calls;
    m.failedCalls += row.failedCalls;
    m.inputTokens += row.inputTokens;
    m.outputTokens += row.outputTokens;
    m.costUsd += row.costUsd;
    models.set(row.modelId, m);
    const b = bindingOf(row.bindingId);
    b.calls += row.calls;
    b.tokens += row.inputTokens + row.outputTokens;
    b.costUsd += row.costUsd;
  }
  for (const row of reserved)
    bindingOf(row.bindingId).reserved = { calls: row.calls, tokens: row.tokens, costUsd: row.costUsd };
  const byKey =
    <T>(key: (t: T) => string) =>
    (a: T, b: T) =>
      key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0;
  return {
    tenant,
    at: now.toISOString(),
    since: new Date(sinceMs).toISOString(),
    models: [...models.values()].sort(byKey((m) => m.model)),
    bindings: [...bindings.values()].sort(byKey((b) => b.binding)),
  };
}
