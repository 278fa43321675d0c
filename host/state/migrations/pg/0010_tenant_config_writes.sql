-- paddock state, version 10, PostgreSQL: configuration bytes each tenant's admins wrote through the API, per UTC day.
CREATE TABLE tenant_config_writes (
  tenant text   NOT NULL,
  day    text   NOT NULL,
  bytes  bigint NOT NULL CHECK (bytes >= 0),
  PRIMARY KEY (tenant, day)
);
