-- paddock state, version 9, PostgreSQL: indexes for reads whose cost grew with the whole store.
CREATE INDEX config_changes_by_object ON config_changes (kind, id, seq);
CREATE INDEX config_changes_deletions ON config_changes (kind, id, version, at) WHERE action = 'deleted';
-- The PostgreSQL form of configRepo.ts TENANT_OF_SPEC.
CREATE INDEX config_objects_by_tenant ON config_objects (kind, coalesce(spec::json ->> 'tenant', 'default'), id);
CREATE INDEX events_run_end ON events (run_id, seq) WHERE type IN ('run.ended', 'run.interrupted');
