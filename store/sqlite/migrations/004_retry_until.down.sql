-- Reverses 004_retry_until.up.sql. Whoever applies it by hand also deletes
-- the row for version 4 of cronfence_schema_migrations in the same
-- transaction.
DROP INDEX IF EXISTS cronfence_slots_retry;
ALTER TABLE cronfence_slots DROP COLUMN retry_until;
