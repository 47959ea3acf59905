-- Back to version 7: the pause locks' first key is the same ('cfpt') in every schema.
CREATE OR REPLACE FUNCTION {{schema}}.job_overrides(jobs text[])
RETURNS TABLE (job text, enabled_override boolean)
-- Overrides are few (a job has one once it was paused or resumed by hand):
-- the planner's default guess of 1,000 rows turned the claim's lookups of
-- its leases into a scan of the table.
LANGUAGE plpgsql VOLATILE ROWS 10
AS $$
BEGIN
    -- 1667657844 is 'cfpt' (cronfence pause) in ASCII: the pause locks' first key.
    PERFORM pg_advisory_xact_lock_shared(1667657844, b.bucket)
       FROM (SELECT DISTINCT {{schema}}.job_state_bucket(j) AS bucket FROM unnest(jobs) AS j) b;
    RETURN QUERY SELECT s.job, s.enabled_override FROM {{schema}}.job_state s WHERE s.job = ANY (jobs);
END;
$$;

CREATE OR REPLACE FUNCTION {{schema}}.lock_job_state(job text)
RETURNS void
LANGUAGE sql VOLATILE
AS $$ SELECT pg_advisory_xact_lock(1667657844, {{schema}}.job_state_bucket(job)) $$;
