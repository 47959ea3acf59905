-- Reverses 003_complete.up.sql. Whoever applies it by hand also deletes the
-- row for version 3 of cronfence_schema_migrations in the same transaction.
DROP TRIGGER IF EXISTS cronfence_complete_insert;
DROP VIEW IF EXISTS cronfence_complete;
DROP TRIGGER IF EXISTS cronfence_fence_insert;
DROP VIEW IF EXISTS cronfence_fence;
DROP TABLE IF EXISTS cronfence_jobs;
DROP INDEX IF EXISTS cronfence_runs_holding;
ALTER TABLE cronfence_runs DROP COLUMN lease_name;
