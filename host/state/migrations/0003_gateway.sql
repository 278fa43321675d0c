-- paddock state, version 3: the host gateway's model calls and recorded skill digests.
-- See docs/state.md ("Gateway") and docs/gateway.md.

-- One row per model call through the gateway (HTTP endpoints and SDK model/complete), refused
-- calls included (status = the HTTP status the harness got). Budgets sum these rows.
CREATE TABLE gateway_calls (
  seq           INTEGER PRIMARY KEY,
  at            TEXT    NOT NULL,
  at_ms         INTEGER NOT NULL,
  run_id        TEXT    NOT NULL,
  session_id    TEXT    NOT NULL,
  binding_id    TEXT    NOT NULL,
  model_id      TEXT    NOT NULL,
  provider      TEXT    NOT NULL,
  endpoint      TEXT    NOT NULL CHECK (endpoint IN ('anthropic', 'responses', 'chat', 'model/complete')),
  status        INTEGER NOT NULL,
  attempts      INTEGER NOT NULL,
  input_tokens  INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  cost_usd      REAL    NOT NULL DEFAULT 0,
  latency_ms    INTEGER NOT NULL,
  error         TEXT
);
CREATE INDEX gateway_calls_run ON gateway_calls (run_id);
CREATE INDEX gateway_calls_binding ON gateway_calls (binding_id, at_ms);

-- The digest of each skill as it was when an admin applied it; a run compares the skill's
-- content against it and flags a change.
CREATE TABLE skill_digests (
  skill_id    TEXT PRIMARY KEY,
  digest      TEXT NOT NULL,
  name        TEXT NOT NULL,
  version     TEXT,
  recorded_at TEXT NOT NULL
) WITHOUT ROWID;
