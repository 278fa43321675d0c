-- paddock state, version 12: what approval metrics and approval webhooks read (issue 14, docs/approvals.md §4, §8).
--
-- The policy's immediate answers (a rule, a default, a floor, a grant) are only in the runs' `approval.decided`
-- events: a partial index on them keyed by the grant that allowed an action serves both the per-binding counts and
-- "was this grant used before it was revoked".
CREATE INDEX events_approval_decided ON events (json_extract(data, '$.grantId')) WHERE type = 'approval.decided';
-- The webhook sweep reads approvals decided since its cursor.
CREATE INDEX approvals_by_decided ON approvals (decided_at) WHERE decided_at IS NOT NULL;

-- Webhook deliveries were one per (registration, run); an approval's ask and its decision are deliveries of their
-- own, several per run. `subject` names what a delivery is about: the run id for `run.ended`, the approval id for
-- `approval.requested`, `<approval id>/decided` for `approval.decided`. SQLite cannot drop the inline UNIQUE
-- constraint, so the table is rebuilt the way version 6 rebuilt `sessions` (webhook_attempts references it and
-- foreign_keys is ON): rows kept aside, the table dropped and created again under its own name, rows put back, the
-- deferred foreign-key count back to zero at COMMIT.
PRAGMA defer_foreign_keys = ON;

CREATE TEMP TABLE webhook_deliveries_v11 AS SELECT * FROM webhook_deliveries;
DROP TABLE webhook_deliveries;
CREATE TABLE webhook_deliveries (
  id              TEXT    PRIMARY KEY,
  webhook_id      TEXT    NOT NULL REFERENCES webhooks (id),
  tenant          TEXT    NOT NULL,
  run_id          TEXT    NOT NULL,
  subject         TEXT    NOT NULL,
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
  UNIQUE (webhook_id, subject)
) WITHOUT ROWID;
INSERT INTO webhook_deliveries (id, webhook_id, tenant, run_id, subject, type, body, state, attempts, last_status,
    last_error, next_attempt_at, claimed_by, claimed_until, created_at, updated_at)
  SELECT id, webhook_id, tenant, run_id, run_id, type, body, state, attempts, last_status, last_error,
    next_attempt_at, claimed_by, claimed_until, created_at, updated_at FROM webhook_deliveries_v11;
DROP TABLE webhook_deliveries_v11;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
