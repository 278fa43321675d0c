-- paddock state, version 11: approvals and capability grants (issue 14, docs/approvals.md §3–§4). An approval is
-- an action a run asked for that waits for a person (pending → approved | denied | expired | void); a capability
-- grant is what an approval with a lasting lifetime leaves behind, exactly the approval's effect and target.
-- approval_changes numbers every status change, so a run's host in another process hears a decision by polling (as
-- run_controls).
-- "capability" grants, not a binding's `grants:` (host/bindings/schema.ts GrantsSchema); docs/decisions.md says so.
CREATE TABLE approvals (
  id                 TEXT    PRIMARY KEY,
  tenant             TEXT    NOT NULL,
  run_id             TEXT    NOT NULL,
  session_id         TEXT    NOT NULL,
  binding_id         TEXT    NOT NULL,
  via                TEXT    NOT NULL,
  effect             TEXT    NOT NULL
    CHECK (effect IN ('fs.read', 'fs.write', 'exec', 'network', 'credential', 'destructive', 'publish')),
  target_kind        TEXT    NOT NULL CHECK (target_kind IN ('path', 'domain', 'command', 'tool')),
  target             TEXT    NOT NULL,
  summary            TEXT    NOT NULL, -- the runner's words, clipped to 2 000 characters; never in the audit log
  data_class         TEXT,
  destination        TEXT,
  risk_score         INTEGER NOT NULL CHECK (risk_score BETWEEN 0 AND 100),
  risk_level         TEXT    NOT NULL CHECK (risk_level IN ('low', 'medium', 'high')),
  risk_reasons       TEXT    NOT NULL, -- JSON array of strings
  goal_revision      INTEGER NOT NULL,
  group_id           TEXT,
  requested_lifetime TEXT    NOT NULL CHECK (requested_lifetime IN ('once', 'run', 'session', 'binding')),
  status             TEXT    NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'expired', 'void')),
  created_at         TEXT    NOT NULL,
  expires_at         TEXT    NOT NULL,
  decided_at         TEXT,
  decided_by         TEXT,
  reason             TEXT,
  grant_id           TEXT
);
CREATE INDEX approvals_by_tenant_status ON approvals (tenant, status);
CREATE INDEX approvals_by_run_status ON approvals (run_id, status);
CREATE INDEX approvals_by_created ON approvals (created_at, id);

CREATE TABLE approval_changes (
  seq         INTEGER PRIMARY KEY AUTOINCREMENT,
  approval_id TEXT    NOT NULL,
  run_id      TEXT    NOT NULL,
  status      TEXT    NOT NULL,
  at          TEXT    NOT NULL
);

CREATE TABLE capability_grants (
  id          TEXT PRIMARY KEY,
  tenant      TEXT NOT NULL,
  binding_id  TEXT NOT NULL,
  session_id  TEXT,
  run_id      TEXT,
  capability  TEXT NOT NULL
    CHECK (capability IN ('fs.read', 'fs.write', 'exec', 'network', 'credential', 'destructive', 'publish')),
  scope_kind  TEXT NOT NULL CHECK (scope_kind IN ('path', 'domain', 'command', 'tool')),
  scope_value TEXT NOT NULL,
  lifetime    TEXT NOT NULL CHECK (lifetime IN ('once', 'run', 'session', 'binding')),
  grantor     TEXT NOT NULL,
  approval_id TEXT,
  created_at  TEXT NOT NULL,
  expires_at  TEXT,
  revoked_at  TEXT,
  revoked_by  TEXT,
  used_at     TEXT,
  CHECK (lifetime = 'binding' OR session_id IS NOT NULL),
  CHECK (lifetime NOT IN ('run', 'once') OR run_id IS NOT NULL)
);
CREATE INDEX capability_grants_by_binding ON capability_grants (tenant, binding_id);
CREATE INDEX capability_grants_by_created ON capability_grants (created_at, id);
