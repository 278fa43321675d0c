-- paddock state, version 10: what each tenant's admins wrote to the configuration through the API, per UTC day
-- (issue 13, fourth attack). Every change is kept in config_changes for good (append-only), so a tenant re-applying
-- large bindings grew the database without bound; host/bindings/apply.ts holds each tenant to a daily budget of
-- bytes written, counted here in the same transaction as the changes.
CREATE TABLE tenant_config_writes (
  tenant TEXT    NOT NULL,
  day    TEXT    NOT NULL, -- YYYY-MM-DD, UTC
  bytes  INTEGER NOT NULL CHECK (bytes >= 0),
  PRIMARY KEY (tenant, day)
) WITHOUT ROWID;
