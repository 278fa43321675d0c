-- paddock state, version 4: model-budget reservations of calls in flight.
-- See docs/gateway.md ("Budgets") and docs/state.md.

-- One row per model call the gateway admitted and has not settled yet: its worst-case tokens and
-- cost (input estimate + max output). Budgets are checked against settled usage (gateway_calls)
-- plus these rows, in the same IMMEDIATE transaction that inserts the new row, so concurrent
-- calls — in one host process or several on one data folder — cannot all pass one check. Settling
-- a call deletes its row in the transaction that inserts its gateway_calls row. A row whose owner
-- (host pid + process start time) is no longer running is deleted by the next check.
CREATE TABLE gateway_reservations (
  id          TEXT    PRIMARY KEY,
  run_id      TEXT    NOT NULL,
  binding_id  TEXT    NOT NULL,
  tokens      INTEGER NOT NULL CHECK (tokens >= 0),
  cost_usd    REAL    NOT NULL CHECK (cost_usd >= 0),
  at_ms       INTEGER NOT NULL,
  owner_pid   INTEGER NOT NULL,
  owner_start INTEGER
) WITHOUT ROWID;
CREATE INDEX gateway_reservations_run ON gateway_reservations (run_id);
CREATE INDEX gateway_reservations_binding ON gateway_reservations (binding_id);
