-- Back to version 12: stored schedules without time policies.
ALTER TABLE {{schema}}.schedules DROP COLUMN catch_up, DROP COLUMN max_catch_up, DROP COLUMN jitter_ns;
