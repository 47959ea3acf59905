-- Version 4: a handler can complete its slot inside its own transaction, a
-- run's end can be recorded again safely, and each job remembers when it was
-- first registered.

-- The lease holding a run row was written under. A holding (lease name,
-- generation) ends once, so it has at most one run row: a finish retried
-- after its first attempt committed but its answer was lost finds the row
-- and writes no second one. Rows written before this version, skips and
-- runs made without a lease have ''.
ALTER TABLE {{schema}}.runs ADD COLUMN lease_name text NOT NULL DEFAULT '';
CREATE UNIQUE INDEX runs_holding_idx ON {{schema}}.runs (lease_name, generation) WHERE lease_name <> '';

-- One row per job ever registered: when a replica first registered it, by
-- the database clock. Catch-up never runs a slot from before then (a job
-- added at 12:29:34 does not run its 12:29:00 slot). Never pruned: a row a
-- job is small, and forgetting it would let catch-up replay history.
CREATE TABLE {{schema}}.jobs (
    job           text        PRIMARY KEY,
    first_seen_at timestamptz NOT NULL
);

-- fence() as in 003, and a fence inside a REPEATABLE READ or SERIALIZABLE
-- transaction whose snapshot predates a takeover raises CF001 too: the row
-- lock then meets the takeover's newer row version and PostgreSQL raises
-- serialization_failure (40001), which a client would take for a conflict
-- worth retrying, not for the lost lease it is. A takeover is the only
-- change to a lease row that conflicts with the lock (renewals and releases
-- keep the key), so that is what the failure means here.
CREATE OR REPLACE FUNCTION {{schema}}.fence(lease_name text, lease_generation bigint)
RETURNS bigint
LANGUAGE plpgsql
AS $$
BEGIN
    BEGIN
        PERFORM 1
           FROM {{schema}}.leases l
          WHERE l.name = lease_name
            AND l.generation = lease_generation
            AND l.expires_at > clock_timestamp()
            FOR KEY SHARE;
    EXCEPTION WHEN serialization_failure THEN
        RAISE EXCEPTION 'cronfence: lease % at generation % is no longer held (taken over after this transaction''s snapshot)',
                        quote_literal(lease_name), lease_generation
              USING ERRCODE = 'CF001',
                    HINT = 'another owner took the lease over; this transaction must not commit';
    END;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'cronfence: lease % at generation % is no longer held', quote_literal(lease_name), lease_generation
              USING ERRCODE = 'CF001',
                    HINT = 'another owner took the lease over or it expired; this transaction must not commit';
    END IF;
    RETURN lease_generation;
END;
$$;

-- complete(name, generation) fences the caller's transaction as fence()
-- does and marks the slot that generation is running completed, in that
-- transaction: the handler's effect and the slot's completion commit
-- together or not at all, so a run whose process stops right after its
-- commit is never run again by another replica. The scheduler's own finish
-- afterwards records the run and releases the lease. A holding with no
-- running slot (a manual run, a lock without --schedule, a slot already
-- completed) is fenced and nothing else.
CREATE FUNCTION {{schema}}.complete(lease_name text, lease_generation bigint)
RETURNS bigint
LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM {{schema}}.fence(lease_name, lease_generation);
    UPDATE {{schema}}.slots s
       SET status = 'completed', finished_at = clock_timestamp()
     WHERE s.status = 'running'
       AND s.lease_name = complete.lease_name
       AND s.generation = lease_generation;
    RETURN lease_generation;
END;
$$;
