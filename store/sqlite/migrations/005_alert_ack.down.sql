-- Reverses 005_alert_ack.up.sql. Whoever applies it by hand also deletes
-- the row for version 5 of cronfence_schema_migrations in the same
-- transaction.
ALTER TABLE cronfence_alerts DROP COLUMN acknowledged_note;
ALTER TABLE cronfence_alerts DROP COLUMN acknowledged_at;
ALTER TABLE cronfence_alerts DROP COLUMN acknowledged_by;
ALTER TABLE cronfence_alerts DROP COLUMN fingerprint;
