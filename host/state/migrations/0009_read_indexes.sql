-- paddock state, version 9: indexes for reads whose cost grew with the whole store (issue 13, third attack).
-- Nothing changes in the data; each index makes one read bounded by what it is about.

-- The tenant of a deleted configuration object (auditReads.ts configTenantBefore, once per exported `config.deleted`
-- or `skill.recorded` record): the deletion's own change row, then the last spec of that object before it.
CREATE INDEX config_changes_by_object ON config_changes (kind, id, seq);
CREATE INDEX config_changes_deletions ON config_changes (kind, id, version, at) WHERE action = 'deleted';

-- One tenant's bindings and resources (routing and planning of a dispatched event, an API apply): a stored spec
-- without `tenant` is the default tenant's (tenantOf), the same expression as configRepo.ts TENANT_OF_SPEC.
CREATE INDEX config_objects_by_tenant ON config_objects (kind, coalesce(json_extract(spec, '$.tenant'), 'default'), id);

-- A run's terminal event (streamReads.ts terminalSeqOfRun, at every opening of GET /v1/runs/:id/events): without it
-- the run's every event row was read to look at its type.
CREATE INDEX events_run_end ON events (run_id, seq) WHERE type IN ('run.ended', 'run.interrupted');
