-- slotAbandon.sql ends as failed a running slot whose run is dead (as in
-- slotListInterrupted.sql, for the grace) and has no attempt left, for the
-- dead claim only, and writes its run row only when it did. It reads the
-- lease row without locking it, and locks only the slot row.
--
-- $1 job, $2 slot, $3 lease name, $4 owner, $5 generation, $6 max attempts,
-- $7 pinned now or NULL, $8 error, $9 logs, $10 grace in µs.
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
                                   THEN l.expires_at > c.now - $10::bigint * interval '1 microsecond'
                                        AND (l.live_key IS NULL OR NOT pg_try_advisory_xact_lock(l.live_key))
                                   ELSE l.acquired_at > c.now - $10::bigint * interval '1 microsecond'
                              END)
    RETURNING t.attempts, t.started_at
),
r AS (
    INSERT INTO {{schema}}.runs (job, slot, manual, catch_up, owner, generation, attempt,
                                 started_at, finished_at, success, skipped, reason, error, logs)
    SELECT $1, $2, false, false, $4, $5, s.attempts, s.started_at, c.now, false, false, '', $8, $9
      FROM s CROSS JOIN c
    RETURNING {{template "runColumns"}}
),
notice AS MATERIALIZED (
    {{template "notice" args "rows" "SELECT 1 AS ord, 'e' AS kind, r.job, r.slot, r.owner FROM r"}}
)
SELECT (SELECT min(b.slot) FROM {{schema}}.slots b WHERE b.job = $1 AND b.status = 'buffered'), r.*
  FROM r
 CROSS JOIN (SELECT count(*) FROM notice) told
