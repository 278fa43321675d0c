-- paddock state, version 18: an index of the records that introduce a signing key (docs/scale-out.md §4).
--
-- Every store open looks for this data folder's key in the chain (a folder joining a shared database with the key it
-- already had writes its `audit.key_created` then): a partial index holds those few rows only, so the look-up reads
-- them instead of the whole log, and no other record's insert pays for it.
CREATE INDEX audit_key_records ON audit (seq) WHERE type = 'audit.key_created';
