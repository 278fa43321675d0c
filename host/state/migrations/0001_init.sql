-- paddock state, version 1. See docs/state.md.
CREATE TABLE sessions (
  id               TEXT PRIMARY KEY,
  binding_id       TEXT NOT NULL,
  conversation_key TEXT NOT NULL,
  created_at       TEXT NOT NULL,
  paused_reason    TEXT,
  UNIQUE (binding_id, conversation_key)
);

CREATE TABLE events (
  session_id TEXT    NOT NULL REFERENCES sessions (id),
  seq        INTEGER NOT NULL CHECK (seq >= 1),
  id         TEXT    NOT NULL UNIQUE,
  type       TEXT    NOT NULL,
  run_id     TEXT,
  at         TEXT    NOT NULL,
  data       TEXT    NOT NULL CHECK (json_valid(data)),
  PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE INDEX events_by_run ON events (run_id) WHERE run_id IS NOT NULL;
-- Recovery looks up open effect intents; nothing else queries by type.
CREATE INDEX events_effects ON events (json_extract(data, '$.effectId'), type) WHERE type LIKE 'effect.%';

CREATE TRIGGER events_no_update BEFORE UPDATE ON events BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;

CREATE TABLE runs (
  id            TEXT PRIMARY KEY,
  session_id    TEXT NOT NULL REFERENCES sessions (id),
  runner_id     TEXT NOT NULL,
  status        TEXT NOT NULL,
  reason        TEXT,
  queued_at     TEXT NOT NULL,
  started_at    TEXT,
  ended_at      TEXT,
  pid           INTEGER,
  pid_start     INTEGER,
  usage         TEXT CHECK (usage IS NULL OR json_valid(usage)),
  last_seq      INTEGER NOT NULL
);
CREATE INDEX runs_by_session ON runs (session_id);
CREATE INDEX runs_by_status ON runs (status);

CREATE TABLE runner_state (
  scope      TEXT NOT NULL,
  key        TEXT NOT NULL,
  value      TEXT NOT NULL CHECK (json_valid(value)),
  updated_at TEXT NOT NULL,
  PRIMARY KEY (scope, key)
) WITHOUT ROWID;

CREATE TABLE audit (
  seq        INTEGER PRIMARY KEY,
  at         TEXT NOT NULL,
  type       TEXT NOT NULL,
  actor      TEXT NOT NULL,
  session_id TEXT,
  run_id     TEXT,
  data       TEXT NOT NULL,
  prev       TEXT NOT NULL,
  hash       TEXT NOT NULL
);
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit BEGIN SELECT RAISE(ABORT, 'audit is append-only'); END;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit BEGIN SELECT RAISE(ABORT, 'audit is append-only'); END;

CREATE TABLE audit_checkpoints (
  seq        INTEGER PRIMARY KEY,
  at         TEXT NOT NULL,
  head       TEXT NOT NULL,
  key_id     TEXT NOT NULL,
  signature  TEXT NOT NULL
);
