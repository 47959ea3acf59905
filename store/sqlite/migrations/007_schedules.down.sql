-- Reverses 007_schedules.up.sql. Whoever applies it by hand also deletes
-- the row for version 7 of cronfence_schema_migrations in the same
-- transaction.
ALTER TABLE cronfence_replicas DROP COLUMN kinds;
DROP TABLE cronfence_schedule_seq;
DROP TABLE cronfence_schedule_changes;
DROP TABLE cronfence_schedules;
