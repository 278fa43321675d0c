-- paddock state, version 19: steering `append` messages asked of the host process that runs the run (docs/approvals.md
-- §7, docs/scale-out.md §4). A host that received a message for a run another process or host runs writes it here;
-- the owner takes it (pending → delivering), hands it to its runner, and answers (accepted | refused). The asker may
-- withdraw it only while nobody took it, and then runs the message as a run of its own: a message is run once.
CREATE TABLE run_messages (
  id           TEXT PRIMARY KEY,
  run_id       TEXT NOT NULL,
  session_id   TEXT NOT NULL,
  tenant       TEXT NOT NULL,
  -- tenant, platform, bot and event id: two hosts asking with one redelivered event ask once.
  delivery_key TEXT NOT NULL UNIQUE,
  event        TEXT NOT NULL,
  status       TEXT NOT NULL CHECK (status IN ('pending', 'delivering', 'accepted', 'refused', 'withdrawn')),
  reason       TEXT,
  asked_by     TEXT NOT NULL,
  asked_at     TEXT NOT NULL,
  answered_at  TEXT
);
CREATE INDEX run_messages_pending ON run_messages (run_id) WHERE status = 'pending';
