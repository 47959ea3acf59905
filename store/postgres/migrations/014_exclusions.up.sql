-- A stored schedule's exclusion windows (store.ScheduleSettings.Exclude):
-- a JSON array of entries, NULL for none.
ALTER TABLE {{schema}}.schedules
    ADD COLUMN exclude json CHECK (exclude IS NULL OR json_typeof(exclude) = 'array');
