-- slotComplete.sql runs inside the caller's transaction: the fence of
-- leaseFence.sql (fenced, a row only when the generation holds the lease)
-- and, only then, the slot the holding runs marked completed, in one round
-- trip. The fence's row lock keeps a takeover out until the caller's
-- commit, so the completion commits with the caller's effect or not at all;
-- the lease row is locked before the slot row, as in every statement.
--
-- $1 job, $2 slot, $3 lease name, $4 generation, $5 pinned now or NULL.
WITH fenced AS (
    SELECT 1 FROM {{schema}}.leases
     WHERE name = $3 AND generation = $4 AND expires_at > coalesce($5::timestamptz, clock_timestamp())
       FOR KEY SHARE
),
completed AS (
    UPDATE {{schema}}.slots
       SET status = 'completed', finished_at = coalesce($5::timestamptz, clock_timestamp())
     WHERE job = $1 AND slot = $2 AND lease_name = $3 AND generation = $4 AND status = 'running'
       AND EXISTS (SELECT 1 FROM fenced)
)
SELECT 1 FROM fenced
