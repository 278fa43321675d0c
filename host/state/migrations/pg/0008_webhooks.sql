-- paddock state, version 8, PostgreSQL: webhooks (docs/http-api.md, "Webhooks").
CREATE TABLE webhooks (
  id         text PRIMARY KEY,
  tenant     text NOT NULL,
  url        text NOT NULL,
  events     text NOT NULL CHECK (events::json IS NOT NULL),
  secret     text NOT NULL,
  created_at text NOT NULL,
  created_by text NOT NULL,
  removed_at text,
  swept_to   text NOT NULL
);
CREATE INDEX webhooks_active ON webhooks (tenant) WHERE removed_at IS NULL;

CREATE TABLE webhook_deliveries (
  id              text    PRIMARY KEY,
  webhook_id      text    NOT NULL REFERENCES webhooks (id),
  tenant          text    NOT NULL,
  run_id          text    NOT NULL,
  type            text    NOT NULL,
  body            text    NOT NULL,
  state           text    NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts        bigint  NOT NULL DEFAULT 0,
  last_status     bigint,
  last_error      text,
  next_attempt_at bigint  NOT NULL,
  claimed_by      text,
  claimed_until   bigint,
  created_at      text    NOT NULL,
  updated_at      text    NOT NULL,
  UNIQUE (webhook_id, run_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';

CREATE TABLE webhook_attempts (
  delivery_id text    NOT NULL REFERENCES webhook_deliveries (id),
  attempt     bigint  NOT NULL,
  at          text    NOT NULL,
  status      bigint,
  error       text,
  duration_ms bigint  NOT NULL,
  PRIMARY KEY (delivery_id, attempt)
);

CREATE INDEX runs_by_end ON runs (ended_at) WHERE ended_at IS NOT NULL;
