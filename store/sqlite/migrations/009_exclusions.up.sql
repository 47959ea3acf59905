-- Version 9: a stored schedule's exclusion windows (store.ScheduleSettings.
-- Exclude): a JSON array of entries, NULL for none. As 014_exclusions on
-- PostgreSQL.
ALTER TABLE cronfence_schedules ADD COLUMN exclude TEXT
    CHECK (exclude IS NULL OR json_type(exclude) = 'array');
