-- leaseRelease.sql expires the lease without deleting it, so the generation
-- never goes back, and only for the owner's own generation.
--
-- $1 name, $2 owner, $3 generation, $4 pinned now or NULL.
UPDATE {{schema}}.leases
   SET expires_at = least(expires_at, coalesce($4::timestamptz, now()))
 WHERE name = $1 AND owner = $2 AND generation = $3
