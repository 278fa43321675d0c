-- paddock state, version 14: what the console's resources page reads (issue 15; docs/http-api.md "Console
-- endpoints"): a tenant's model spend of the last 24 h, and what a run last found of each skill's content.

-- GET /v1/spend: the window's calls alone, each index entry carrying what the sums need (the session for the tenant,
-- binding, model, status, tokens, cost), so the read is bounded by the last 24 h and no row of gateway_calls is read.
CREATE INDEX gateway_calls_window ON gateway_calls (at_ms, session_id, binding_id, model_id, status, input_tokens,
  output_tokens, cost_usd);

-- A run that finds a skill's content other than the digest recorded at apply records it on the skill's row: the
-- digest it found, when, and the run. Re-applying the skill clears them (its content is accepted again). NULL: no run
-- found a change since the skill was last applied.
ALTER TABLE skill_digests ADD COLUMN changed_digest TEXT;
ALTER TABLE skill_digests ADD COLUMN changed_at TEXT;
ALTER TABLE skill_digests ADD COLUMN changed_run_id TEXT;
