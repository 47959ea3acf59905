-- leaseRenew.sql extends the lease only for its owner at its generation and
-- only before it expired: a holder that lost it gets no row back.
--
-- $1 name, $2 owner, $3 generation, $4 TTL in µs, $5 pinned now or NULL.
UPDATE {{schema}}.leases AS t
   SET expires_at = c.now + $4::bigint * interval '1 microsecond',
       renewed_at = c.now
  FROM (SELECT coalesce($5::timestamptz, now()) AS now) c
 WHERE t.name = $1 AND t.owner = $2 AND t.generation = $3 AND t.expires_at > c.now
RETURNING t.name, t.owner, t.generation, t.acquired_at, t.renewed_at, t.expires_at
