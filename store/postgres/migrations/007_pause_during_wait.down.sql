-- Back to version 6: claims read the pause overrides from their snapshot.
DROP FUNCTION {{schema}}.lock_job_state(text);
DROP FUNCTION {{schema}}.job_overrides(text[]);
DROP FUNCTION {{schema}}.job_state_bucket(text);
