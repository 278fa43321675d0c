-- paddock state, version 17, PostgreSQL: hosts and their leases, and which host owns a run (docs/scale-out.md §4).
-- lease_until is milliseconds since 1970 on the database's clock (now()), never a host's.
CREATE TABLE hosts (
  host_id       text   NOT NULL,
  epoch         bigint NOT NULL CHECK (epoch >= 1),
  started_at    text   NOT NULL,
  lease_until   bigint NOT NULL,
  version       text   NOT NULL,
  dead_at       text,
  taken_over_by text,
  PRIMARY KEY (host_id, epoch)
);
CREATE INDEX hosts_live ON hosts (lease_until) WHERE dead_at IS NULL;

ALTER TABLE runs ADD COLUMN owner_host text;
ALTER TABLE runs ADD COLUMN owner_epoch bigint;
CREATE INDEX runs_open_by_owner ON runs (owner_host, owner_epoch) WHERE status IN ('queued', 'running');
