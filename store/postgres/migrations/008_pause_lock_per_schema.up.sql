-- The pause locks of migration 007 are advisory locks, and PostgreSQL keys
-- those per database, not per schema: with the fixed first key of 007
-- ('cfpt'), a pause in one cronfence schema held up, until its commit, the
-- sleeping claims of the same bucket in every other cronfence schema of
-- the database (two services sharing one database), and their claims held
-- up its pauses. The first key is now derived from the schema's name, as
-- the migration lock's is (migrate.go, migrationLockKey): each schema's
-- pauses and claims meet only each other. hashtext of a constant is folded
-- when the statement is planned, so the locks cost what they did.
--
-- Pauses and claims call these functions, not the keys themselves, so
-- every replica of the schema agrees on the key once this is applied.
CREATE OR REPLACE FUNCTION {{schema}}.job_overrides(jobs text[])
RETURNS TABLE (job text, enabled_override boolean)
-- Overrides are few (a job has one once it was paused or resumed by hand):
-- the planner's default guess of 1,000 rows turned the claim's lookups of
-- its leases into a scan of the table.
LANGUAGE plpgsql VOLATILE ROWS 10
AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(hashtext('cronfence.pause:{{schema}}'), b.bucket)
       FROM (SELECT DISTINCT {{schema}}.job_state_bucket(j) AS bucket FROM unnest(jobs) AS j) b;
    RETURN QUERY SELECT s.job, s.enabled_override FROM {{schema}}.job_state s WHERE s.job = ANY (jobs);
END;
$$;

CREATE OR REPLACE FUNCTION {{schema}}.lock_job_state(job text)
RETURNS void
LANGUAGE sql VOLATILE
AS $$ SELECT pg_advisory_xact_lock(hashtext('cronfence.pause:{{schema}}'), {{schema}}.job_state_bucket(job)) $$;
