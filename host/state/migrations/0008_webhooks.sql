-- paddock state, version 8: webhooks (issue 13). A tenant registers a URL; each run of its sessions that
-- ends gets one delivery per matching registration, POSTed by a delivery worker of `paddock serve`.
-- See docs/http-api.md ("Webhooks").

-- Registrations. `secret` is the HMAC key the host signs with: stored (the host must use it), answered
-- once at creation, never listed, audited, logged or counted. Removal keeps the row (ids never come
-- back, deliveries keep their parent) and blanks the secret.
CREATE TABLE webhooks (
  id         TEXT PRIMARY KEY,
  tenant     TEXT NOT NULL,
  url        TEXT NOT NULL,
  events     TEXT NOT NULL CHECK (json_valid(events)),
  secret     TEXT NOT NULL,
  created_at TEXT NOT NULL,
  created_by TEXT NOT NULL,
  removed_at TEXT,
  -- Runs that ended before this instant were looked at by the catch-up sweep (ISO 8601).
  swept_to   TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX webhooks_active ON webhooks (tenant) WHERE removed_at IS NULL;

-- One row per (registration, run): the body is built once, so every attempt sends the same bytes.
-- A worker claims a due row (claimed_by, claimed_until) in a write transaction before sending it:
-- two host processes on one data folder never send one delivery at the same time.
CREATE TABLE webhook_deliveries (
  id              TEXT    PRIMARY KEY,
  webhook_id      TEXT    NOT NULL REFERENCES webhooks (id),
  tenant          TEXT    NOT NULL,
  run_id          TEXT    NOT NULL,
  type            TEXT    NOT NULL,
  body            TEXT    NOT NULL,
  state           TEXT    NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts        INTEGER NOT NULL DEFAULT 0,
  last_status     INTEGER,
  last_error      TEXT,
  next_attempt_at INTEGER NOT NULL, -- unix ms
  claimed_by      TEXT,
  claimed_until   INTEGER,          -- unix ms
  created_at      TEXT    NOT NULL,
  updated_at      TEXT    NOT NULL,
  UNIQUE (webhook_id, run_id)
) WITHOUT ROWID;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';

-- Every attempt of a delivery, in order (the delivery log).
CREATE TABLE webhook_attempts (
  delivery_id TEXT    NOT NULL REFERENCES webhook_deliveries (id),
  attempt     INTEGER NOT NULL,
  at          TEXT    NOT NULL,
  status      INTEGER,
  error       TEXT,
  duration_ms INTEGER NOT NULL,
  PRIMARY KEY (delivery_id, attempt)
) WITHOUT ROWID;

-- The catch-up sweep reads runs by the time they ended.
CREATE INDEX runs_by_end ON runs (ended_at) WHERE ended_at IS NOT NULL;
