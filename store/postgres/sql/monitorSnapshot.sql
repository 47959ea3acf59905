-- monitorSnapshot reads, in one statement, what a pass of the absence
-- checks judges besides each job's own runs: each part as its own list
-- statement reads it (replicaList, jobStateList, runList, alertListOpen,
-- leaseList: the same columns, order and limits), its rows as one JSON
-- array of rows, each row a JSON array of those columns in that order, so
-- the store reads them with the same scan code.
--
-- Each replica's row has, after its jobs, a digest of them (md5 of their
-- text), then its kinds (few: always sent); its jobs are NULL, not sent,
-- when the caller named that digest for it ($6, $7): with thousands of jobs a replica, writing them out as JSON
-- text and reading them back took the checks' pass 0.3 to 0.9 s of the
-- database at 10,000 jobs, every 15 s, where the digest alone takes a few
-- ms.
--
-- $1 pinned now or NULL (the leases' clock), $2 how many recent runs, $3
-- how many open alerts, $4 the leases' name prefix, $5 how many leases,
-- $6 and $7 the owners and digests of the jobs the caller holds.
WITH c AS (SELECT coalesce($1::timestamptz, now()) AS now),
known AS (SELECT * FROM unnest($6::text[], $7::text[]) AS k(owner, hash))
SELECT c.now,
       (SELECT coalesce(json_agg(json_build_array({{template "replicaColumnsBeforeJobs"}},
                                                  CASE WHEN d.hash = (SELECT k.hash FROM known k WHERE k.owner = r.owner) THEN NULL
                                                       ELSE r.jobs::text END,
                                                  d.hash, r.kinds::text)
                                 ORDER BY r.owner COLLATE "C"), '[]')::text
          FROM {{schema}}.replicas r
         CROSS JOIN LATERAL (SELECT md5(r.jobs::text) AS hash) d),
       (SELECT coalesce(json_agg(json_build_array(job, enabled_override, override_by, override_at, note, override_until) ORDER BY job COLLATE "C"), '[]')::text
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
