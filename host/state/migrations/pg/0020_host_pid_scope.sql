-- paddock state, version 20, PostgreSQL: where a host start's pids mean something (see the SQLite migration 20).
ALTER TABLE hosts ADD COLUMN pid_scope text;
