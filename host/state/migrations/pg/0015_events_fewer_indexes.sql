-- paddock state, version 15, PostgreSQL: two fewer index inserts per stored event (docs/decisions.md SS1, SS2). SQLite
-- rebuilt `events` to drop the inline UNIQUE on id; PostgreSQL drops the constraint. The other indexes and triggers
-- stay as they are.
ALTER TABLE events DROP CONSTRAINT events_id_key;
DROP INDEX events_by_run;
CREATE INDEX events_by_run_except_updates ON events (run_id) WHERE run_id IS NOT NULL AND type <> 'run.update';
