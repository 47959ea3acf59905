-- fence() locks the lease row FOR KEY SHARE instead of FOR SHARE, as
-- LeaseFence does. A takeover locks the row FOR UPDATE, which conflicts with
-- either, so it still waits for a fenced transaction to commit; but the
-- owner's renewals and release, updates of non-key columns, no longer wait
-- behind the owner's own open fenced transactions (one renewal statement
-- renews every lease of a replica, so before this, one long fenced
-- transaction could let the replica's other leases expire). The lock
-- survives a renewal: PostgreSQL carries key-share lockers over to the row
-- version an update that keeps the key makes. clock_timestamp(), not now():
-- now() is frozen at the start of the caller's transaction and would let a
-- long transaction pass a stale check.
CREATE OR REPLACE FUNCTION {{schema}}.fence(lease_name text, lease_generation bigint)
RETURNS bigint
LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM 1
       FROM {{schema}}.leases l
      WHERE l.name = lease_name
        AND l.generation = lease_generation
        AND l.expires_at > clock_timestamp()
        FOR KEY SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'cronfence: lease % at generation % is no longer held', quote_literal(lease_name), lease_generation
              USING ERRCODE = 'CF001',
                    HINT = 'another owner took the lease over or it expired; this transaction must not commit';
    END IF;
    RETURN lease_generation;
END;
$$;
