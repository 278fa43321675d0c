-- paddock state, version 18, PostgreSQL: an index of the records that introduce a signing key (docs/scale-out.md §4).
-- Every store open looks for this data folder's key in the chain; the partial index holds those few rows only.
CREATE INDEX audit_key_records ON audit (seq) WHERE type = 'audit.key_created';
