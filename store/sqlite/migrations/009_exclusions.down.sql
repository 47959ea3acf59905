-- Reverses 009_exclusions.up.sql. Whoever applies it by hand also deletes
-- the row for version 9 of cronfence_schema_migrations in the same
-- transaction.
ALTER TABLE cronfence_schedules DROP COLUMN exclude;
