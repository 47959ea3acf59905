-- slotAbandon.sql ends as failed a running slot whose run is dead (as in
-- slotListInterrupted.sql, for the grace) and has no attempt left, for the
-- dead claim only, and writes the dead holding's interrupted run row only
-- when it did, as runInterrupted.sql writes it: with the error that says
-- how the run was found dead, and the lease's expiry as its end when it
-- expired (otherwise now). A holding has one run row: one it has already
-- is kept and returned. It reads the lease row without locking it, and
-- locks only the slot row.
--
-- $1 job, $2 slot, $3 lease name, $4 owner, $5 generation, $6 max attempts,
-- $7 pinned now or NULL, $8 logs, $9 grace in µs, $10 reason, and the
-- error if its lease expired ($11), if its owner's process was gone ($12),
-- if a later holder took its lease ($13).
WITH c AS (SELECT coalesce($7::timestamptz, now()) AS now),
s AS (
    UPDATE {{schema}}.slots t
       SET status = 'failed', finished_at = c.now
      FROM c
     WHERE t.job = $1 AND t.slot = $2 AND t.lease_name = $3 AND t.owner = $4 AND t.generation = $5
       AND t.status = 'running' AND t.attempts >= $6
       -- Not possibly alive: the claim's generation expired before
       -- now - grace, or its owner's process is gone; or a later generation
       -- took the lease before now - grace.
       AND NOT EXISTS (SELECT 1 FROM {{schema}}.leases l
                        WHERE l.name = $3
                          AND CASE WHEN l.generation = $5
                                   THEN l.expires_at > c.now - $9::bigint * interval '1 microsecond'
                                        AND (l.live_key IS NULL OR NOT pg_try_advisory_xact_lock(l.live_key))
                                   ELSE l.acquired_at > c.now - $9::bigint * interval '1 microsecond'
                              END)
    RETURNING t.attempts, t.started_at
),
-- How it was found dead, and its end: the lease's expiry when it expired.
found AS (
    SELECT CASE WHEN l.generation IS DISTINCT FROM $5 THEN $13
                WHEN l.expires_at <= c.now THEN $11
                ELSE $12 END AS error,
           CASE WHEN l.generation = $5 AND l.expires_at <= c.now THEN l.expires_at ELSE c.now END AS ended
      FROM c
      LEFT JOIN {{schema}}.leases l ON l.name = $3
),
r AS (
    INSERT INTO {{schema}}.runs (job, slot, manual, catch_up, owner, generation, lease_name, attempt,
                                 started_at, finished_at, success, skipped, reason, error, logs)
    SELECT $1, $2, false, false, $4, $5, $3, s.attempts, s.started_at, greatest(found.ended, s.started_at),
           false, false, $10, found.error, $8
      FROM s CROSS JOIN found
    ON CONFLICT (lease_name, generation) WHERE lease_name <> '' DO NOTHING
    RETURNING {{template "runColumns"}}
),
row AS (
    SELECT * FROM r
    UNION ALL
    SELECT {{template "runColumns"}} FROM {{schema}}.runs
     -- lease_name <> '': runs_holding_idx's predicate.
     WHERE lease_name = $3 AND generation = $5 AND lease_name <> ''
       AND EXISTS (SELECT 1 FROM s) AND NOT EXISTS (SELECT 1 FROM r)
),
notice AS MATERIALIZED (
    {{template "notice" args "rows" "SELECT 1 AS ord, 'e' AS kind, $1::text AS job, $2::timestamptz AS slot, $4::text AS owner FROM s"}}
)
SELECT (SELECT min(b.slot) FROM {{schema}}.slots b WHERE b.job = $1 AND b.status = 'buffered'), row.*
  FROM row
 CROSS JOIN (SELECT count(*) FROM notice) told
