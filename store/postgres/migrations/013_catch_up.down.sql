-- Back to version 12: stored schedules without a catch-up policy.
ALTER TABLE {{schema}}.schedules DROP COLUMN catch_up, DROP COLUMN max_catch_up;
