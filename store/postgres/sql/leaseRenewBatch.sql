-- leaseRenewBatch.sql is leaseRenew.sql for many leases at once.
--
-- $1 names, $2 owners, $3 generations, $4 TTLs in µs, $5 pinned now or NULL.
UPDATE {{schema}}.leases AS t
   SET expires_at = c.now + v.ttl_us * interval '1 microsecond',
       renewed_at = c.now
  FROM (SELECT coalesce($5::timestamptz, now()) AS now) c,
       unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[]) AS v(name, owner, generation, ttl_us)
 WHERE t.name = v.name AND t.owner = v.owner AND t.generation = v.generation AND t.expires_at > c.now
RETURNING t.name, t.owner, t.generation, t.acquired_at, t.renewed_at, t.expires_at
