-- paddock state, version 17: hosts and their leases, and which host owns a run (issue 17; docs/scale-out.md §4).
--
-- A host is one process of one data folder (host_id, from the folder's host-id file) in one start (epoch, growing).
-- It owns the runs it queued (or took over) while its lease lasts; a host whose lease ran out is taken over by
-- another: its open runs are interrupted, its never-started queued runs re-owned, and its row marked dead in the same
-- transaction. lease_until is milliseconds since 1970 on the database's clock (SQLite: the machine's, which every
-- process of the one data folder shares).
CREATE TABLE hosts (
  host_id       TEXT    NOT NULL,
  epoch         INTEGER NOT NULL CHECK (epoch >= 1),
  started_at    TEXT    NOT NULL,
  lease_until   INTEGER NOT NULL,
  version       TEXT    NOT NULL,
  dead_at       TEXT,
  taken_over_by TEXT,
  PRIMARY KEY (host_id, epoch)
) WITHOUT ROWID;
CREATE INDEX hosts_live ON hosts (lease_until) WHERE dead_at IS NULL;

-- NULL: a run queued by a process that holds no lease (every run on SQLite today, and every run before version 17).
ALTER TABLE runs ADD COLUMN owner_host TEXT;
ALTER TABLE runs ADD COLUMN owner_epoch INTEGER;
CREATE INDEX runs_open_by_owner ON runs (owner_host, owner_epoch) WHERE status IN ('queued', 'running');
