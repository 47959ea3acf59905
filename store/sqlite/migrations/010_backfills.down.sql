-- Reverses 010_backfills.up.sql. Whoever applies it by hand also deletes
-- the row for version 10 of cronfence_schema_migrations in the same
-- transaction.
DROP TABLE cronfence_backfills;
