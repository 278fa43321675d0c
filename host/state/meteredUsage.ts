import type { Usage } from '../../sdk/protocol/types.js';
import { dbOf, type Store } from './store.js';

/** A run's usage as the host measured it, with the runner's own claim kept apart. */
export type RunUsage = Usage & {
  /** Model calls the host gateway answered for the run (refused calls are not counted). */
  modelCalls: number;
  /** Where the figures come from: always the host's gateway meter, never the runner. */
  meteredBy: 'host gateway';
  /** What the runner (e.g. a harness's own `total_cost_usd`) said it used: unverified, for reference only. */
  reportedByRunner?: Usage;
};

/**
 * The run's usage from the host's own meter (`gateway_calls`: tokens from the providers' usage
 * fields, cost from the model's pricing), with the runner's claim, if any, labelled beside it.
 * A run that used no model through the gateway metered zero.
 */
export function meteredUsage(store: Store, runId: string, reportedByRunner?: Usage): RunUsage {
  const row = dbOf(store)
    .prepare(
      'SELECT count(*) AS calls, coalesce(sum(input_tokens), 0) AS input, coalesce(sum(output_tokens), 0) AS ' +
        'output, coalesce(sum(cost_usd), 0) AS cost FROM gateway_calls WHERE run_id = ? AND status < 400',
    )
    .get(runId) as { calls: number; input: number; output: number; cost: number };
  return {
    inputTokens: row.input,
    outputTokens: row.output,
    costUsd: row.cost,
    modelCalls: row.calls,
    meteredBy: 'host gateway',
    ...(reportedByRunner ? { reportedByRunner } : {}),
  };
}
