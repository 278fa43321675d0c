-- paddock state, version 6: tenants. See docs/state.md ("Tenants") and docs/http-api.md.
-- A session records its tenant when it is created and keeps it; the session key becomes
-- (tenant, binding_id, conversation_key) and the dedupe key (tenant, platform, bot, event_id).
-- SQLite cannot drop the old inline UNIQUE constraints, so both tables are rebuilt.
--
-- sessions: `events` and `runs` reference sessions (id) and foreign_keys is ON (it cannot be switched off inside the
-- migration's transaction). With defer_foreign_keys ON, dropping `sessions` (an implicit DELETE of every row) counts
-- each child row it orphans instead of failing at once, and inserting a parent row counts down every child row it
-- adopts: so the rows are kept aside in a temporary table, the table is dropped and created again under its own name
-- (the references in events/runs name `sessions` and now resolve to the new table), and the rows go back in. At COMMIT
-- the count is zero unless a child row lost its parent; then the commit fails and the migration rolls back. (Creating
-- the new table under another name and renaming it would never count down: the rows were inserted before the drop.)
-- The pragma ends with the transaction.
PRAGMA defer_foreign_keys = ON;

CREATE TEMP TABLE sessions_v5 AS SELECT * FROM sessions;
DROP TABLE sessions;
CREATE TABLE sessions (
  id               TEXT PRIMARY KEY,
  tenant           TEXT NOT NULL,
  binding_id       TEXT NOT NULL,
  conversation_key TEXT NOT NULL,
  created_at       TEXT NOT NULL,
  paused_reason    TEXT,
  UNIQUE (tenant, binding_id, conversation_key)
);
INSERT INTO sessions (id, tenant, binding_id, conversation_key, created_at, paused_reason)
  SELECT id, 'default', binding_id, conversation_key, created_at, paused_reason FROM sessions_v5;
DROP TABLE sessions_v5;
CREATE INDEX sessions_by_tenant ON sessions (tenant, created_at);

-- dispatched_events: nothing references it; built new, copied, renamed.
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
