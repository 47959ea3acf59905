-- leaseFence.sql runs inside the caller's transaction. FOR KEY SHARE
-- conflicts with the FOR UPDATE lock a takeover takes (see fragments/leaseAcquisition.sql),
-- so the takeover waits for the commit. It does not conflict with the
-- FOR NO KEY UPDATE of a renewal: with FOR SHARE, a handler's open fenced
-- transaction held up its replica's renewal batch, every lease it renews,
-- until the commit, and leases of other jobs could expire meanwhile. The
-- lock outlives a renewal: Postgre.sql carries key-share lockers over to
-- the new row version of an update that leaves the key as it was.
SELECT 1 FROM {{schema}}.leases
 WHERE name = $1 AND generation = $2 AND expires_at > coalesce($3::timestamptz, clock_timestamp())
   FOR KEY SHARE
