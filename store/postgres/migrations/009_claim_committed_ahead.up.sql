-- A claim sent ahead of its slot (store.SlotClaimParams.WaitDue) whose
-- slots have no row and whose leases are free commits at once, before the
-- slot, and the replica waits for the slot on its own monotonic clock
-- (slotClaim.sql, the ahead mode). Two things follow.
--
-- A pause must still stop a slot whose claim committed ahead, unless it
-- was acknowledged after the slot; and a resume must still let a slot run
-- that a claim sent ahead while the job was paused settled skipped,
-- unless it was acknowledged after the slot. Such a claim held the job's
-- pause lock while it judged (job_overrides), and until 009 it committed
-- after the slot, so a pause or resume that waited for the lock was
-- acknowledged after the slot too. Now, after taking the lock,
-- lock_job_state waits until the latest slot of the job that has a row
-- dated in the future, which only a claim sent ahead writes, at most
-- store.MaxClaimWait (100 ms) away: so it is acknowledged after that slot,
-- as a pause racing a waiting claim always was. Read after the lock, in a
-- statement of its own: a plpgsql statement of a volatile function takes
-- a snapshot of its own, which sees a claim that committed while this one
-- waited for the lock.
CREATE OR REPLACE FUNCTION {{schema}}.lock_job_state(job text)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    until timestamptz;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('cronfence.pause:{{schema}}'), {{schema}}.job_state_bucket(lock_job_state.job));
    SELECT max(s.slot) INTO until
      FROM {{schema}}.slots s
     WHERE s.job = lock_job_state.job
       AND s.slot > clock_timestamp()
       AND s.slot <= clock_timestamp() + interval '100 milliseconds';
    IF until IS NOT NULL THEN
        -- pg_sleep never wakes before its end (it sleeps again until then).
        PERFORM pg_sleep(extract(epoch FROM until - clock_timestamp()));
    END IF;
END;
$$;

-- claim_committed runs a claim (slotClaim.sql, as slotClaimJSON.sql
-- answering one row of JSON) that the caller prepared on its connection
-- under the name stmt, with its fifteen arguments, commits it, and only
-- then reads the database clock: that reading, unlike one the statement
-- takes before its commit, is behind the commit's WAL flush, so the time
-- left to the slot from it is what the replica must still wait, not that
-- plus the flush. One statement at the server (CALL: what it runs inside
-- is not a statement of its own), one round trip. A procedure, since only
-- a procedure may commit; called outside any transaction block, so the
-- commit is the claim's alone. It runs the caller's prepared statement
-- (SQL EXECUTE) rather than the statement's text, which would be parsed
-- and planned at every call (13 to 20 ms of the server's time on a 2-core
-- VM, against under one for the prepared plan); SQL EXECUTE takes its
-- arguments as values written into its text (%L), not as parameters. It
-- runs with its caller's rights: it runs nothing its caller could not run
-- itself.
CREATE PROCEDURE {{schema}}.claim_committed(
    stmt text,
    jobs text[], slots timestamptz[], lease_names text[], disabled boolean[], overlap_policies text[],
    max_attempts integer[], ttls bigint[], catch_up boolean[], owner text, pinned_now timestamptz,
    live_key bigint, retry_failed boolean[], retry_of integer[], wait_due boolean[], max_wait_us bigint,
    INOUT answer jsonb DEFAULT NULL, INOUT committed_at timestamptz DEFAULT NULL)
LANGUAGE plpgsql
AS $$
BEGIN
    EXECUTE format('EXECUTE %I(%L, %L, %L, %L, %L, %L, %L, %L, %L, %L, %L, %L, %L, %L, %L)', stmt,
                   jobs, slots, lease_names, disabled, overlap_policies, max_attempts, ttls, catch_up, owner, pinned_now,
                   live_key, retry_failed, retry_of, wait_due, max_wait_us)
       INTO answer;
    COMMIT;
    committed_at := clock_timestamp();
END;
$$;
