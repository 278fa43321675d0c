-- paddock state, version 7, PostgreSQL: API tokens of `paddock serve` (only the SHA-256 of a secret is kept).
CREATE TABLE api_tokens (
  id           text    PRIMARY KEY CHECK (length(id) = 12),
  tenant       text    NOT NULL,
  role         text    NOT NULL CONSTRAINT api_tokens_role_check CHECK (role IN ('platform', 'approver', 'admin')),
  name         text    NOT NULL,
  secret_hash  bytea   NOT NULL CHECK (length(secret_hash) = 32),
  created_at   text    NOT NULL,
  created_by   text    NOT NULL,
  expires_at   text,
  revoked_at   text,
  revoked_by   text,
  last_used_at text
);
CREATE INDEX api_tokens_by_tenant ON api_tokens (tenant);
