-- Reverses 008_time_policies.up.sql. Whoever applies it by hand also
-- deletes the row for version 8 of cronfence_schema_migrations in the same
-- transaction.
ALTER TABLE cronfence_schedules DROP COLUMN jitter_ns;
ALTER TABLE cronfence_schedules DROP COLUMN max_catch_up;
ALTER TABLE cronfence_schedules DROP COLUMN catch_up;
ALTER TABLE cronfence_job_state DROP COLUMN override_until;
