-- paddock state, version 2: resources and bindings, dispatch bookkeeping, run ownership.
-- See docs/state.md ("Configuration", "Dispatch").

-- The current version of every resource and binding (kind: model, knowledgeBase, mcpServer,
-- skill, artifact, mount, binding). `spec` is the validated object, defaults applied.
CREATE TABLE config_objects (
  kind       TEXT    NOT NULL,
  id         TEXT    NOT NULL,
  version    INTEGER NOT NULL CHECK (version >= 1),
  spec       TEXT    NOT NULL CHECK (json_valid(spec)),
  updated_at TEXT    NOT NULL,
  PRIMARY KEY (kind, id)
) WITHOUT ROWID;

-- Every change ever made to config_objects; append-only.
CREATE TABLE config_changes (
  seq     INTEGER PRIMARY KEY,
  at      TEXT    NOT NULL,
  kind    TEXT    NOT NULL,
  id      TEXT    NOT NULL,
  version INTEGER NOT NULL,
  action  TEXT    NOT NULL CHECK (action IN ('created', 'updated', 'deleted')),
  spec    TEXT    CHECK (spec IS NULL OR json_valid(spec)),
  by      TEXT    NOT NULL
);
CREATE TRIGGER config_changes_no_update BEFORE UPDATE ON config_changes BEGIN SELECT RAISE(ABORT, 'config_changes is append-only'); END;
CREATE TRIGGER config_changes_no_delete BEFORE DELETE ON config_changes BEGIN SELECT RAISE(ABORT, 'config_changes is append-only'); END;

-- One row per platform event accepted by dispatch: a redelivery finds it and starts nothing.
CREATE TABLE dispatched_events (
  platform   TEXT NOT NULL,
  bot        TEXT NOT NULL,
  event_id   TEXT NOT NULL,
  binding_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  run_id     TEXT NOT NULL,
  at         TEXT NOT NULL,
  PRIMARY KEY (platform, bot, event_id)
) WITHOUT ROWID;

-- Requests to stop a run, for whichever host process owns it (e.g. `bindings disable --cancel-active`).
CREATE TABLE run_controls (
  seq        INTEGER PRIMARY KEY,
  run_id     TEXT NOT NULL,
  action     TEXT NOT NULL CHECK (action IN ('cancel')),
  reason     TEXT NOT NULL,
  by         TEXT NOT NULL,
  at         TEXT NOT NULL
);
CREATE INDEX run_controls_by_run ON run_controls (run_id);

-- Which host process owns a run (pid + start time): recovery leaves runs of a live host alone.
ALTER TABLE runs ADD COLUMN binding_id TEXT;
ALTER TABLE runs ADD COLUMN host_pid INTEGER;
ALTER TABLE runs ADD COLUMN host_start INTEGER;
CREATE INDEX runs_by_binding ON runs (binding_id, status);
