-- monitorSnapshot reads, in one statement, what a pass of the absence
-- checks judges besides each job's own runs: each part as its own list
-- statement reads it (replicaList, jobStateList, runList, alertListOpen,
-- leaseList: the same columns, order and limits), its rows as one JSON
-- array of rows, each row a JSON array of those columns in that order, so
-- the store reads them with the same scan code.
--
-- $1 pinned now or NULL (the leases' clock), $2 how many recent runs, $3
-- how many open alerts, $4 the leases' name prefix, $5 how many leases.
WITH c AS (SELECT coalesce($1::timestamptz, now()) AS now)
SELECT c.now,
       (SELECT coalesce(json_agg(json_build_array({{template "replicaColumns"}}) ORDER BY owner COLLATE "C"), '[]')::text
          FROM {{schema}}.replicas),
       (SELECT coalesce(json_agg(json_build_array(job, enabled_override, override_by, override_at, note) ORDER BY job COLLATE "C"), '[]')::text
          FROM {{schema}}.job_state),
       (SELECT coalesce(json_agg(json_build_array({{template "runColumns"}}) ORDER BY id DESC), '[]')::text
          FROM (SELECT * FROM {{schema}}.runs ORDER BY id DESC LIMIT $2) r),
       (SELECT coalesce(json_agg(json_build_array({{template "alertColumns"}}) ORDER BY id DESC), '[]')::text
          FROM (SELECT * FROM {{schema}}.alerts WHERE resolved_at IS NULL ORDER BY id DESC LIMIT $3) a),
       (SELECT coalesce(json_agg(json_build_array({{template "leaseColumns"}}) ORDER BY name COLLATE "C"), '[]')::text
          FROM (SELECT * FROM {{schema}}.leases
                 WHERE expires_at > c.now AND starts_with(name, $4)
                 ORDER BY name COLLATE "C"
                 LIMIT $5) l)
  FROM c
