-- leaseAcquire.sql takes the lease when it is free or expired, in one atomic
-- statement (see fragments/leaseAcquisition.sql): concurrent contenders serialise on the
-- row, and exactly one gets each generation. When nothing was taken, the
-- second branch reports the holder (as of the statement's snapshot; no row
-- when the holder's row is newer than it).
--
-- $1 name, $2 owner, $3 TTL in µs, $4 pinned now or NULL, $5 live key or 0.
WITH c AS (SELECT coalesce($4::timestamptz, now()) AS now, false AS waited),
{{template "leaseAcquisition" args "wanted" "SELECT $1::text AS name, $3::bigint AS ttl_us" "owner" "$2" "liveKey" "$5"}}
SELECT true, {{template "leaseColumns"}} FROM lease
UNION ALL
SELECT false, {{template "leaseColumns"}} FROM {{schema}}.leases
 WHERE name = $1 AND NOT EXISTS (SELECT 1 FROM lease)
