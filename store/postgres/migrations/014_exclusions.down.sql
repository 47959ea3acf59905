-- Back to version 13: stored schedules without exclusion windows.
ALTER TABLE {{schema}}.schedules DROP COLUMN exclude;
