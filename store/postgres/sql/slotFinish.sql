-- slotFinish.sql ends a run in one round trip: slot marked and lease
-- released, both only for the claim's owner and generation, and the run row
-- written whatever they did, once per holding (a retry returns the row the
-- first attempt wrote; a row a replica wrote as it found the run dead is
-- replaced: see fragments/ownEnd.sql). When a slot was given but not marked (the
-- generation no longer held it: it was taken over), the run row records
-- that, not the handler's verdict: success false, and $18 (the error,
-- prefixed with the takeover; see store.TakenOverError) as its error.
--
-- $1 job, $2 slot, $3 lease name, $4 owner, $5 generation, $6 status,
-- $7 pinned now or NULL, $8 manual, $9 catch-up, $10 attempt,
-- $11 started_at or NULL, $12 finished_at or NULL, $13 success,
-- $14 skipped, $15 reason, $16 error, $17 logs, $18 error if taken over,
-- $19 error if the slot does not end completed, or ”, $20 until when a
-- failed slot is open to a retry, or NULL.
WITH c AS (SELECT coalesce($7::timestamptz, now()) AS now),
l AS (
    UPDATE {{schema}}.leases t
       SET expires_at = least(t.expires_at, c.now)
      FROM c
     WHERE t.name = $3 AND t.owner = $4 AND t.generation = $5
    RETURNING 1
),
s AS (
    -- A slot this holding completed already (complete() in the handler's
    -- transaction, or this finish retried after its answer was lost)
    -- stays completed, with its finish time. A failed one is not taken
    -- for this holding's: SlotAbandon may have ended it (a retry of a
    -- failed finish then reads as a takeover, and returns the first row).
    -- Status running leaves a running slot running (for a resume) and
    -- unfinished.
    UPDATE {{schema}}.slots t
       SET status      = CASE WHEN t.status = 'running' THEN $6 ELSE t.status END,
           finished_at = CASE WHEN t.status = 'running' AND $6 = 'running' THEN NULL
                              ELSE coalesce(t.finished_at, c.now) END,
           -- A failed slot open to a retry until then (NULL: never).
           retry_until = CASE WHEN t.status = 'running' AND $6 = 'failed' THEN $20::timestamptz END
      FROM c
     WHERE t.job = $1 AND t.slot = $2 AND t.lease_name = $3 AND t.owner = $4
       AND t.generation = $5 AND t.status IN ('running', 'completed')
       -- Lock order, as in slotClaim.sql: the lease row first.
       AND (SELECT count(*) FROM l) >= 0
    RETURNING t.started_at, t.status
),
fate AS (
    SELECT $2::timestamptz IS NOT NULL AND NOT EXISTS (SELECT 1 FROM s) AS taken_over,
           -- The slot does not end completed: the run row takes $19. With
           -- status running (a run left to resume), a takeover is the
           -- resume that followed.
           $19 <> '' AND (EXISTS (SELECT 1 FROM s WHERE s.status <> 'completed')
                          OR ($6 = 'running' AND NOT EXISTS (SELECT 1 FROM s))) AS not_completed
),
r AS (
    INSERT INTO {{schema}}.runs AS x (job, slot, manual, catch_up, owner, generation, lease_name, attempt,
                                 started_at, finished_at, success, skipped, reason, error, logs)
    SELECT $1, $2, $8, $9, $4, $5, $3, $10,
           coalesce($11::timestamptz, (SELECT started_at FROM s), c.now),
           coalesce($12::timestamptz, c.now), $13 AND NOT fate.taken_over AND NOT fate.not_completed, $14, $15,
           CASE WHEN fate.not_completed THEN $19::text WHEN fate.taken_over THEN $18::text ELSE $16 END, $17
      FROM c CROSS JOIN fate
    {{template "ownEnd"}}
    RETURNING {{template "runColumns"}}
),
-- The listeners stop watching the run (see notice.go), unless its slot is
-- left running for a resume: they go on watching it, and find it dead. A
-- manual run has no slot to tell of.
notice AS MATERIALIZED (
    {{template "notice" args "rows" "SELECT 1 AS ord, 'e' AS kind, $1::text AS job, $2::timestamptz AS slot, $4::text AS owner WHERE $2::timestamptz IS NOT NULL AND coalesce((SELECT status FROM s), '') <> 'running'"}}
),
row AS (
    SELECT * FROM r
    UNION ALL
    SELECT {{template "runColumns"}} FROM {{schema}}.runs
     -- lease_name <> '': runs_holding_idx's predicate, so that a plan made
     -- for any $3 can use that index rather than read the runs table.
     WHERE lease_name = $3 AND generation = $5 AND lease_name <> '' AND NOT EXISTS (SELECT 1 FROM r)
)
SELECT EXISTS (SELECT 1 FROM s), (SELECT status FROM s), EXISTS (SELECT 1 FROM l),
       (SELECT min(b.slot) FROM {{schema}}.slots b WHERE b.job = $1 AND b.status = 'buffered'),
       row.*
  FROM row
 CROSS JOIN (SELECT count(*) FROM notice) told
