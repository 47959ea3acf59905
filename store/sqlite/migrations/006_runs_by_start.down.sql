-- Reverses 006_runs_by_start.up.sql. Whoever applies it by hand also
-- deletes the row for version 6 of cronfence_schema_migrations in the same
-- transaction.
DROP INDEX IF EXISTS cronfence_runs_job_started;
