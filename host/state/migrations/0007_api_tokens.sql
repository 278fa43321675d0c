-- paddock state, version 7: API tokens of `paddock serve` (docs/http-api.md, "Tokens, tenants, roles").
-- A token is shown once (pdk_<id>_<secret>); only the SHA-256 of its secret is kept.
CREATE TABLE api_tokens (
  id           TEXT    PRIMARY KEY CHECK (length(id) = 12),
  tenant       TEXT    NOT NULL,
  role         TEXT    NOT NULL CHECK (role IN ('platform', 'approver', 'admin')),
  name         TEXT    NOT NULL,
  secret_hash  BLOB    NOT NULL CHECK (length(secret_hash) = 32),
  created_at   TEXT    NOT NULL,
  created_by   TEXT    NOT NULL,
  expires_at   TEXT,
  revoked_at   TEXT,
  revoked_by   TEXT,
  last_used_at TEXT
) WITHOUT ROWID;
CREATE INDEX api_tokens_by_tenant ON api_tokens (tenant);
