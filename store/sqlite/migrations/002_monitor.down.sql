-- Reverses 002_monitor.up.sql. Whoever applies it by hand also deletes the
-- row for version 2 of cronfence_schema_migrations in the same transaction.
DROP INDEX IF EXISTS cronfence_alerts_resolved;
DROP INDEX IF EXISTS cronfence_alerts_open;
DROP TABLE IF EXISTS cronfence_alerts;
DROP TABLE IF EXISTS cronfence_replicas;
