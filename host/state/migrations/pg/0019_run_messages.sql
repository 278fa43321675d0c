-- paddock state, version 19, PostgreSQL: steering `append` messages asked of the host that runs the run (see the
-- SQLite migration of the same version for the rules).
CREATE TABLE run_messages (
  id           text PRIMARY KEY,
  run_id       text NOT NULL,
  session_id   text NOT NULL,
  tenant       text NOT NULL,
  delivery_key text NOT NULL UNIQUE,
  event        text NOT NULL,
  status       text NOT NULL CHECK (status IN ('pending', 'delivering', 'accepted', 'refused', 'withdrawn')),
  reason       text,
  asked_by     text NOT NULL,
  asked_at     text NOT NULL,
  answered_at  text
);
CREATE INDEX run_messages_pending ON run_messages (run_id) WHERE status = 'pending';
