-- slotFinishBatch.sql ends many runs in one statement, each item as
-- slotFinish.sql ends one (read that file for what each part decides):
-- its lease released and its slot marked, both only for the item's owner
-- and generation, and its run row written once per holding (an item sent
-- again returns the row the first sending wrote).
--
-- One statement, not the single finish once per item: a replica ending
-- thousands of runs a second spent most of a batch on running a statement
-- of many parts once per run (0.2 ms each at the server, against tens of
-- µs per item here).
--
--   - i unpacks the items, in lease name order (the caller sorts them),
--     each with its clock (pinned, else the database's) and its log lines
--     as the slice logs_from..logs_to of $17.
--   - held locks the items' lease rows (those the items still hold) in
--     name order, the order every
--     claim locks them in, before anything is written: lease rows before
--     slot rows, as in slotClaim.sql, so a batch and a claim, or a batch
--     and a renewal of the same replica's leases, never wait on each other
--     in a cycle.
--   - l, s, fate, r, notice and row are slotFinish.sql's, keyed by item.
--     No two items may share a holding (lease name and generation): the
--     caller refuses such a batch.
--
-- $1 jobs, $2 slots (NULL for a manual run), $3 lease names, $4 owners,
-- $5 generations, $6 statuses, $7 pinned nows (NULL: the database clock),
-- $8 manual, $9 catch-up, $10 attempts, $11 started_at (NULL: the slot's),
-- $12 finished_at (NULL: now), $13 success, $14 skipped, $15 reasons,
-- $16 errors, $17 every item's log lines, one after the other, $18 and
-- $19 each item's first and last line in $17 (first > last: none), $20
-- errors if taken over, $21 errors if the slot does not end completed, or
-- '', $22 until when a failed slot is open to a retry (NULL: never).
WITH i AS (
    SELECT u.*, coalesce(u.pinned, now()) AS now
      FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::bigint[], $6::text[],
                  $7::timestamptz[], $8::boolean[], $9::boolean[], $10::integer[], $11::timestamptz[],
                  $12::timestamptz[], $13::boolean[], $14::boolean[], $15::text[], $16::text[],
                  $18::integer[], $19::integer[], $20::text[], $21::text[], $22::timestamptz[])
           WITH ORDINALITY AS u(job, slot, lease_name, owner, generation, status, pinned, manual, catch_up, attempt,
                                started_at, finished_at, success, skipped, reason, error, logs_from, logs_to,
                                taken_over_error, not_completed_error, retry_until, ord)
),
held AS (
    SELECT t.name
      FROM {{schema}}.leases t
     WHERE t.name = ANY ($3::text[])
       AND (t.name, t.owner, t.generation) IN (SELECT lease_name, owner, generation FROM i)
     ORDER BY t.name
       FOR NO KEY UPDATE OF t
),
l AS (
    UPDATE {{schema}}.leases t
       SET expires_at = least(t.expires_at, i.now)
      FROM i
     WHERE t.name = i.lease_name AND t.owner = i.owner AND t.generation = i.generation
       -- Lock order: the rows in name order first (an InitPlan, run
       -- before the first row).
       AND (SELECT count(*) FROM held) >= 0
    RETURNING i.ord
),
s AS (
    UPDATE {{schema}}.slots t
       SET status      = CASE WHEN t.status = 'running' THEN i.status ELSE t.status END,
           finished_at = CASE WHEN t.status = 'running' AND i.status = 'running' THEN NULL
                              ELSE coalesce(t.finished_at, i.now) END,
           retry_until = CASE WHEN t.status = 'running' AND i.status = 'failed' THEN i.retry_until END
      FROM i
     WHERE t.job = i.job AND t.slot = i.slot AND t.lease_name = i.lease_name AND t.owner = i.owner
       AND t.generation = i.generation AND t.status IN ('running', 'completed')
       -- Lock order, as in slotClaim.sql: the lease rows first.
       AND (SELECT count(*) FROM l) >= 0
    RETURNING i.ord, t.started_at, t.status
),
fate AS (
    SELECT i.ord, s.started_at, s.status,
           i.slot IS NOT NULL AND s.ord IS NULL AS taken_over,
           i.not_completed_error <> '' AND ((s.ord IS NOT NULL AND s.status <> 'completed')
                                            OR (i.status = 'running' AND s.ord IS NULL)) AS not_completed
      FROM i
      LEFT JOIN s ON s.ord = i.ord
),
r AS (
    INSERT INTO {{schema}}.runs AS x (job, slot, manual, catch_up, owner, generation, lease_name, attempt,
                                 started_at, finished_at, success, skipped, reason, error, logs)
    SELECT i.job, i.slot, i.manual, i.catch_up, i.owner, i.generation, i.lease_name, i.attempt,
           coalesce(i.started_at, f.started_at, i.now),
           coalesce(i.finished_at, i.now), i.success AND NOT f.taken_over AND NOT f.not_completed, i.skipped, i.reason,
           CASE WHEN f.not_completed THEN i.not_completed_error WHEN f.taken_over THEN i.taken_over_error ELSE i.error END,
           coalesce(($17::text[])[i.logs_from:i.logs_to], '{}')
      FROM i
      JOIN fate f ON f.ord = i.ord
     ORDER BY i.ord
    {{template "ownEnd"}}
    RETURNING {{template "runColumns"}}
),
-- As slotFinish.sql: the listeners stop watching each run, unless its
-- slot is left running for a resume; a manual run has no slot to tell of.
notice AS MATERIALIZED (
    {{template "notice" args "rows" "SELECT f.ord, 'e' AS kind, i.job, i.slot, i.owner FROM i JOIN fate f ON f.ord = i.ord WHERE i.slot IS NOT NULL AND coalesce(f.status, '') <> 'running'"}}
),
row AS (
    SELECT i.ord, r.*
      FROM r
      JOIN i ON i.lease_name = r.lease_name AND i.generation = r.generation
    UNION ALL
    SELECT i.ord, x.*
      FROM i
     CROSS JOIN LATERAL (
           SELECT {{template "runColumns"}} FROM {{schema}}.runs
            -- lease_name <> '': runs_holding_idx's predicate, so the
            -- lookup can use that index.
            WHERE lease_name = i.lease_name AND generation = i.generation AND lease_name <> ''
            LIMIT 1) x
     WHERE NOT EXISTS (SELECT 1 FROM r WHERE r.lease_name = i.lease_name AND r.generation = i.generation)
)
SELECT f.ord IN (SELECT ord FROM s), f.status, f.ord IN (SELECT ord FROM l),
       (SELECT min(b.slot) FROM {{schema}}.slots b WHERE b.job = i.job AND b.status = 'buffered'),
       row.*
  FROM i
  JOIN fate f ON f.ord = i.ord
  JOIN row ON row.ord = i.ord
 CROSS JOIN (SELECT count(*) FROM notice) told
 ORDER BY i.ord
