-- paddock state, version 5, PostgreSQL: run claims (UNIQUE (session_id): at most one claimed run per session).
CREATE TABLE run_claims (
  run_id     text    PRIMARY KEY,
  session_id text    NOT NULL UNIQUE,
  binding_id text    NOT NULL,
  host_pid   bigint  NOT NULL,
  host_start bigint,
  at         text    NOT NULL
);
CREATE INDEX run_claims_by_binding ON run_claims (binding_id);

ALTER TABLE runs ADD COLUMN queued_seq bigint;
UPDATE runs SET queued_seq = (SELECT e.seq FROM events e WHERE e.session_id = runs.session_id AND e.run_id = runs.id
  AND e.type = 'run.queued');
CREATE INDEX runs_waiting ON runs (session_id, queued_seq) WHERE status = 'queued';
