-- Back to version 12: stored schedules without time policies.
ALTER TABLE {{schema}}.schedules DROP COLUMN catch_up, DROP COLUMN max_catch_up, DROP COLUMN jitter_ns;
DROP FUNCTION {{schema}}.job_overrides_until(text[]);
ALTER TABLE {{schema}}.job_state DROP COLUMN override_until;
