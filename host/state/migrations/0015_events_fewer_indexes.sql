-- paddock state, version 15: two fewer B-tree inserts per stored event (issue 16, the stored stream; docs/decisions.md
-- SS1, SS2).
--
-- The events table without the unique index on `id`. No query reads an event by its id: every reader goes by
-- (session_id, seq), by run, or by a partial index. The index cost each appended row one more B-tree insert (≈ a
-- quarter of SQLite's row work on a streaming run's `run.update`s) only to check what the id's construction already
-- makes unique (store.ts newEventId: millisecond, per-process counter, 32 random bits). SQLite cannot drop an inline
-- UNIQUE, so the table is rebuilt: same columns, checks, primary key, reference and append-only triggers. Nothing
-- references `events` (it references `sessions`, and every copied row keeps its parent); dropping a table fires no
-- DELETE trigger.
CREATE TABLE events_v15 (
  session_id TEXT    NOT NULL REFERENCES sessions (id),
  seq        INTEGER NOT NULL CHECK (seq >= 1),
  id         TEXT    NOT NULL,
  type       TEXT    NOT NULL,
  run_id     TEXT,
  at         TEXT    NOT NULL,
  data       TEXT    NOT NULL CHECK (json_valid(data)),
  PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
INSERT INTO events_v15 (session_id, seq, id, type, run_id, at, data)
  SELECT session_id, seq, id, type, run_id, at, data FROM events ORDER BY session_id, seq;
DROP TABLE events;
ALTER TABLE events_v15 RENAME TO events;

-- A run's events by run id, its updates left out (docs/decisions.md SS2): `events_by_run` held every event of a run,
-- so a streaming run paid one more B-tree insert per `run.update` (≈ another quarter of the row work). A run's updates
-- all come after its `run.started` (superviseRun records the start before it reads a line of the runner's output) and
-- within its session, whose primary key (session_id, seq) already orders them; the run's other events (queued,
-- started, requests, notices, changes, effects, its end: a few each) stay indexed by run. streamReads.ts reads a run as
-- the two ranges merged in seq order; recoveryReads.ts finds `run.started` here.
CREATE INDEX events_by_run_except_updates ON events (run_id) WHERE run_id IS NOT NULL AND type <> 'run.update';
CREATE INDEX events_effects ON events (json_extract(data, '$.effectId'), type) WHERE type LIKE 'effect.%';
CREATE INDEX events_run_end ON events (run_id, seq) WHERE type IN ('run.ended', 'run.interrupted');
CREATE INDEX events_approval_decided ON events (json_extract(data, '$.grantId')) WHERE type = 'approval.decided';
CREATE TRIGGER events_no_update BEFORE UPDATE ON events BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
