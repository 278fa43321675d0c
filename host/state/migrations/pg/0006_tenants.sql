-- paddock state, version 6, PostgreSQL: tenants. SQLite rebuilt both tables to change their keys; PostgreSQL alters
-- them in place (the same keys result).
ALTER TABLE sessions ADD COLUMN tenant text NOT NULL DEFAULT 'default';
ALTER TABLE sessions ALTER COLUMN tenant DROP DEFAULT;
ALTER TABLE sessions DROP CONSTRAINT sessions_binding_id_conversation_key_key;
ALTER TABLE sessions ADD CONSTRAINT sessions_tenant_binding_conversation_key UNIQUE (tenant, binding_id, conversation_key);
CREATE INDEX sessions_by_tenant ON sessions (tenant, created_at);

ALTER TABLE dispatched_events ADD COLUMN tenant text NOT NULL DEFAULT 'default';
ALTER TABLE dispatched_events ALTER COLUMN tenant DROP DEFAULT;
ALTER TABLE dispatched_events DROP CONSTRAINT dispatched_events_pkey;
ALTER TABLE dispatched_events ADD PRIMARY KEY (tenant, platform, bot, event_id);

UPDATE config_objects SET spec = jsonb_set(spec::jsonb, '{tenant}', '"default"')::text
  WHERE NOT (spec::jsonb ? 'tenant');
