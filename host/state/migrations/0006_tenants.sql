-- paddock state, version 6: tenants. See docs/state.md ("Tenants") and docs/http-api.md.
-- A session records its tenant when it is created and keeps it; the session key becomes
-- (tenant, binding_id, conversation_key) and the dedupe key (tenant, platform, bot, event_id).
-- SQLite cannot drop the old inline UNIQUE constraints, so both tables are rebuilt: create the new
-- table, copy, drop the old one, rename. `events` and `runs` reference sessions (id) and
-- foreign_keys is ON: dropping `sessions` deletes its rows implicitly, which would violate those
-- references at once; deferred, they are checked at COMMIT, when the rebuilt table holds every id
-- again (a missing one fails the commit and the migration rolls back). The pragma ends with the
-- transaction. Renaming the NEW table (never the old one) keeps the references in events/runs
-- naming `sessions`.
PRAGMA defer_foreign_keys = ON;

CREATE TABLE sessions_new (
  id               TEXT PRIMARY KEY,
  tenant           TEXT NOT NULL,
  binding_id       TEXT NOT NULL,
  conversation_key TEXT NOT NULL,
  created_at       TEXT NOT NULL,
  paused_reason    TEXT,
  UNIQUE (tenant, binding_id, conversation_key)
);
INSERT INTO sessions_new (id, tenant, binding_id, conversation_key, created_at, paused_reason)
  SELECT id, 'default', binding_id, conversation_key, created_at, paused_reason FROM sessions;
DROP TABLE sessions;
ALTER TABLE sessions_new RENAME TO sessions;
CREATE INDEX sessions_by_tenant ON sessions (tenant, created_at);

CREATE TABLE dispatched_events_new (
  tenant     TEXT NOT NULL,
  platform   TEXT NOT NULL,
  bot        TEXT NOT NULL,
  event_id   TEXT NOT NULL,
  binding_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  run_id     TEXT NOT NULL,
  at         TEXT NOT NULL,
  PRIMARY KEY (tenant, platform, bot, event_id)
) WITHOUT ROWID;
INSERT INTO dispatched_events_new (tenant, platform, bot, event_id, binding_id, session_id, run_id, at)
  SELECT 'default', platform, bot, event_id, binding_id, session_id, run_id, at FROM dispatched_events;
DROP TABLE dispatched_events;
ALTER TABLE dispatched_events_new RENAME TO dispatched_events;

-- Resources and bindings stored before tenants belong to the operator tenant (the schema's default),
-- so the next apply of the same file finds them unchanged.
UPDATE config_objects SET spec = json_set(spec, '$.tenant', 'default') WHERE json_type(spec, '$.tenant') IS NULL;
