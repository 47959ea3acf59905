-- A pause acknowledged before a slot is due stops the slot, even when the
-- slot's claim was sent ahead and is waiting in its statement for the slot
-- (store.SlotClaimParams.WaitDue). The claim statement's snapshot is taken
-- when it starts, up to store.MaxClaimWait before the slot, so it cannot
-- read a pause written during its wait; and a claim that judges before its
-- wait (slotClaim.sql's ahead mode) has judged by then. So:
--
--   - a claim that sleeps for its slot reads its jobs' overrides through
--     job_overrides (one that does not reads them from its snapshot, taken
--     when it started, not before its slots were due), which first
--     takes its jobs' pause locks shared and then reads job_state with a
--     snapshot of its own (a VOLATILE function's query takes a new one):
--     it sees every pause committed before it got the locks;
--   - a pause (or resume) takes its job's pause lock exclusively before it
--     writes, and keeps it until its commit (lock_job_state).
--
-- Either the claim holds the lock first, and the pause waits for the claim
-- to commit (at or after the slot, so the pause is acknowledged after it:
-- the claim came first), or the pause does, and the claim waits for the
-- pause to commit and then reads it. Locks are transaction-level advisory
-- locks (shared memory, nothing written), two-key form, so they never meet
-- the one-key liveness locks: the first key is cronfence's for pauses, the
-- second one of 16 buckets of job names, which bounds how many a batch of
-- a thousand jobs holds. A pause waits for the claims in flight of its
-- bucket (tens of milliseconds; a large batch under load, longer), and the
-- claims of that bucket that come meanwhile wait behind it.
CREATE FUNCTION {{schema}}.job_state_bucket(job text)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT hashtext(job) & 15 $$;

CREATE FUNCTION {{schema}}.job_overrides(jobs text[])
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

CREATE FUNCTION {{schema}}.lock_job_state(job text)
RETURNS void
LANGUAGE sql VOLATILE
AS $$ SELECT pg_advisory_xact_lock(1667657844, {{schema}}.job_state_bucket(job)) $$;
