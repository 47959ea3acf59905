-- leaseList.sql reads the clock once and the leases unexpired by it whose
-- names begin with the prefix. The outer join yields the clock alone, as
-- one row of NULLs, when no lease is held.
--
-- $1 pinned now or NULL, $2 prefix (empty for all), $3 limit.
WITH c AS (SELECT coalesce($1::timestamptz, now()) AS now)
SELECT c.now, l.name, l.owner, l.generation, l.acquired_at, l.renewed_at, l.expires_at
  FROM c LEFT JOIN LATERAL (
       SELECT {{template "leaseColumns"}} FROM {{schema}}.leases
        WHERE expires_at > c.now AND starts_with(name, $2)
        ORDER BY name COLLATE "C"
        LIMIT $3) l ON true
 ORDER BY l.name COLLATE "C"
