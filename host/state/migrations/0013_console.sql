-- paddock state, version 13: what the admin console reads (issue 15, docs/console.md §3–§4; docs/http-api.md).
--
-- The `viewer` role: api_tokens checks its role inline, and SQLite cannot change a CHECK constraint, so the table is
-- rebuilt under its own name (nothing references it) with the rows copied as they are.
CREATE TABLE api_tokens_v13 (
  id           TEXT    PRIMARY KEY CHECK (length(id) = 12),
  tenant       TEXT    NOT NULL,
  role         TEXT    NOT NULL CHECK (role IN ('platform', 'approver', 'admin', 'viewer')),
  name         TEXT    NOT NULL,
  secret_hash  BLOB    NOT NULL CHECK (length(secret_hash) = 32),
  created_at   TEXT    NOT NULL,
  created_by   TEXT    NOT NULL,
  expires_at   TEXT,
  revoked_at   TEXT,
  revoked_by   TEXT,
  last_used_at TEXT
) WITHOUT ROWID;
INSERT INTO api_tokens_v13 SELECT id, tenant, role, name, secret_hash, created_at, created_by, expires_at,
  revoked_at, revoked_by, last_used_at FROM api_tokens;
DROP TABLE api_tokens;
ALTER TABLE api_tokens_v13 RENAME TO api_tokens;
CREATE INDEX api_tokens_by_tenant ON api_tokens (tenant, created_at);

-- The outcome of every verification of the whole audit chain (`paddock audit verify`, `GET /v1/audit/verify`), so
-- the overview shows the last one without walking the chain. A convenience record, not evidence: the chain and its
-- signed checkpoints are the evidence, and verifying again is the check. `bad_seq`/`problem`: the first bad record.
CREATE TABLE audit_verifications (
  id       INTEGER PRIMARY KEY AUTOINCREMENT,
  at       TEXT    NOT NULL,
  ok       INTEGER NOT NULL CHECK (ok IN (0, 1)),
  records  INTEGER NOT NULL,
  bad_seq  INTEGER,
  problem  TEXT,
  via      TEXT    NOT NULL CHECK (via IN ('cli', 'api')),
  by       TEXT    NOT NULL
);

-- The overview's counts of a tenant's queued and running runs: by status, then session (its tenant is the session's),
-- so each count reads only the index entries of runs in that status.
CREATE INDEX runs_by_status_session ON runs (status, session_id);
