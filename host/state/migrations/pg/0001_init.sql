-- paddock state, version 1, PostgreSQL (docs/scale-out.md §2; the SQLite file of the same version is the reference).
-- Types: TEXT stays text (JSON as text checked by a ::json cast, so the bytes stored are the bytes hashed), INTEGER is
-- bigint. Append-only tables refuse UPDATE and DELETE by a row trigger and TRUNCATE (which skips row triggers) by a
-- statement trigger.
CREATE FUNCTION paddock_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '%', TG_ARGV[0] USING ERRCODE = 'restrict_violation';
END
$$;

CREATE TABLE sessions (
  id               text PRIMARY KEY,
  binding_id       text NOT NULL,
  conversation_key text NOT NULL,
  created_at       text NOT NULL,
  paused_reason    text,
  UNIQUE (binding_id, conversation_key)
);

CREATE TABLE events (
  session_id text   NOT NULL REFERENCES sessions (id),
  seq        bigint NOT NULL CHECK (seq >= 1),
  id         text   NOT NULL UNIQUE,
  type       text   NOT NULL,
  run_id     text,
  at         text   NOT NULL,
  data       text   NOT NULL CHECK (data::json IS NOT NULL),
  PRIMARY KEY (session_id, seq)
);
CREATE INDEX events_by_run ON events (run_id) WHERE run_id IS NOT NULL;
CREATE INDEX events_effects ON events ((data::json ->> 'effectId'), type) WHERE type LIKE 'effect.%';
CREATE TRIGGER events_no_update BEFORE UPDATE OR DELETE ON events FOR EACH ROW
  EXECUTE FUNCTION paddock_append_only('events are append-only');
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events FOR EACH STATEMENT
  EXECUTE FUNCTION paddock_append_only('events are append-only');

CREATE TABLE runs (
  id            text PRIMARY KEY,
  session_id    text NOT NULL REFERENCES sessions (id),
  runner_id     text NOT NULL,
  status        text NOT NULL,
  reason        text,
  queued_at     text NOT NULL,
  started_at    text,
  ended_at      text,
  pid           bigint,
  pid_start     bigint,
  usage         text CHECK (usage IS NULL OR usage::json IS NOT NULL),
  last_seq      bigint NOT NULL
);
CREATE INDEX runs_by_session ON runs (session_id);
CREATE INDEX runs_by_status ON runs (status);

CREATE TABLE runner_state (
  scope      text NOT NULL,
  key        text NOT NULL,
  value      text NOT NULL CHECK (value::json IS NOT NULL),
  updated_at text NOT NULL,
  PRIMARY KEY (scope, key)
);

CREATE TABLE audit (
  seq        bigint PRIMARY KEY,
  at         text NOT NULL,
  type       text NOT NULL,
  actor      text NOT NULL,
  session_id text,
  run_id     text,
  data       text NOT NULL,
  prev       text NOT NULL,
  hash       text NOT NULL
);
CREATE TRIGGER audit_no_update BEFORE UPDATE OR DELETE ON audit FOR EACH ROW
  EXECUTE FUNCTION paddock_append_only('audit is append-only');
CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit FOR EACH STATEMENT
  EXECUTE FUNCTION paddock_append_only('audit is append-only');

CREATE TABLE audit_checkpoints (
  seq        bigint PRIMARY KEY,
  at         text NOT NULL,
  head       text NOT NULL,
  key_id     text NOT NULL,
  signature  text NOT NULL
);
