-- paddock state, version 4: run claims. The store decides which queued run may start, so the
-- one-run-per-session rule and the concurrency limits hold across every host process on one data
-- folder (several CLIs, the server). See docs/state.md ("Claims").

-- A run holds a claim from just before it starts until the transaction that ends it (run.ended or
-- run.interrupted deletes the row). UNIQUE (session_id): at most one claimed run per session.
CREATE TABLE run_claims (
  run_id     TEXT    PRIMARY KEY,
  session_id TEXT    NOT NULL UNIQUE,
  binding_id TEXT    NOT NULL,
  host_pid   INTEGER NOT NULL,
  host_start INTEGER,
  at         TEXT    NOT NULL
) WITHOUT ROWID;
CREATE INDEX run_claims_by_binding ON run_claims (binding_id);

-- The seq of each run's run.queued event: the order runs of one session must start in.
ALTER TABLE runs ADD COLUMN queued_seq INTEGER;
UPDATE runs SET queued_seq = (SELECT e.seq FROM events e WHERE e.session_id = runs.session_id AND e.run_id = runs.id AND e.type = 'run.queued');
CREATE INDEX runs_waiting ON runs (session_id, queued_seq) WHERE status = 'queued';
