-- paddock state, version 4, PostgreSQL: model-budget reservations of calls in flight.
CREATE TABLE gateway_reservations (
  id          text    PRIMARY KEY,
  run_id      text    NOT NULL,
  binding_id  text    NOT NULL,
  tokens      bigint  NOT NULL CHECK (tokens >= 0),
  cost_usd    double precision NOT NULL CHECK (cost_usd >= 0),
  at_ms       bigint  NOT NULL,
  owner_pid   bigint  NOT NULL,
  owner_start bigint
);
CREATE INDEX gateway_reservations_run ON gateway_reservations (run_id);
CREATE INDEX gateway_reservations_binding ON gateway_reservations (binding_id);
