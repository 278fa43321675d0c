-- paddock state, version 14, PostgreSQL: a tenant's model spend of the last 24 h, what a run found of a skill.
CREATE INDEX gateway_calls_window ON gateway_calls (at_ms, session_id, binding_id, model_id, status, input_tokens,
  output_tokens, cost_usd);
ALTER TABLE skill_digests ADD COLUMN changed_digest text;
ALTER TABLE skill_digests ADD COLUMN changed_at text;
ALTER TABLE skill_digests ADD COLUMN changed_run_id text;
