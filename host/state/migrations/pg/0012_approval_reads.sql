-- paddock state, version 12, PostgreSQL: what approval metrics and approval webhooks read. SQLite rebuilt
-- webhook_deliveries to swap a UNIQUE; PostgreSQL alters it in place.
CREATE INDEX events_approval_decided ON events ((data::json ->> 'grantId')) WHERE type = 'approval.decided';
CREATE INDEX approvals_by_decided ON approvals (decided_at) WHERE decided_at IS NOT NULL;

ALTER TABLE webhook_deliveries ADD COLUMN subject text;
UPDATE webhook_deliveries SET subject = run_id;
ALTER TABLE webhook_deliveries ALTER COLUMN subject SET NOT NULL;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_webhook_id_run_id_key;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_webhook_id_subject_key UNIQUE (webhook_id, subject);
