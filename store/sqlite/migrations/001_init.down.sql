-- Reverses 001_init.up.sql. cronfence_schema_migrations belongs to the
-- migration runner, not to this file: whoever applies it by hand also
-- deletes the row for version 1 in the same transaction.
DROP INDEX IF EXISTS cronfence_runs_job_id;
DROP TABLE IF EXISTS cronfence_runs;
DROP TABLE IF EXISTS cronfence_job_state;
DROP INDEX IF EXISTS cronfence_slots_buffered;
DROP INDEX IF EXISTS cronfence_slots_running;
DROP TABLE IF EXISTS cronfence_slots;
DROP TABLE IF EXISTS cronfence_leases;
