-- runInterrupted.sql writes the run row of each dead holding that
-- slotListInterrupted.sql listed (see Store.RunInterrupted): for each item
-- whose slot is still running under that holding and whose run is still
-- dead (judged as there), an interrupted row with the error that says how
-- it was found dead, and the lease's expiry as its end when it expired
-- (otherwise now). A holding has one run row: one it has already is kept
-- and returned. Nothing is locked but the rows written (and the liveness
-- try-lock, released when the statement's transaction ends).
--
-- $1 jobs, $2 slots, $3 lease names, $4 owners, $5 generations, the errors
-- if its lease expired ($6), if its owner's process was gone ($7), if a
-- later holder took its lease ($8), $9 log lines (” for none), $10 reason,
-- $11 pinned now or NULL.
WITH c AS (SELECT coalesce($11::timestamptz, now()) AS now),
i AS (
    SELECT *
      FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[], $8::text[], $9::text[])
           WITH ORDINALITY AS i(job, slot, lease_name, owner, generation, expired, gone, taken, log, ord)
),
d AS (
    SELECT i.ord, i.job, i.slot, i.lease_name, i.owner, i.generation, i.log, s.attempts, s.started_at,
           CASE WHEN l.name IS NULL OR l.generation <> s.generation THEN i.taken
                WHEN l.expires_at <= c.now THEN i.expired
                ELSE i.gone END AS error,
           CASE WHEN l.generation = s.generation AND l.expires_at <= c.now THEN l.expires_at ELSE c.now END AS ended
      FROM i
     CROSS JOIN c
      JOIN {{schema}}.slots s ON s.job = i.job AND s.slot = i.slot
      LEFT JOIN {{schema}}.leases l ON l.name = s.lease_name
     WHERE s.status = 'running' AND s.lease_name = i.lease_name AND s.owner = i.owner AND s.generation = i.generation
       AND (l.name IS NULL
            OR l.generation <> s.generation
            OR l.expires_at <= c.now
            OR (l.live_key IS NOT NULL AND pg_try_advisory_xact_lock(l.live_key)))
),
r AS (
    INSERT INTO {{schema}}.runs (job, slot, manual, catch_up, owner, generation, lease_name, attempt,
                                 started_at, finished_at, success, skipped, reason, error, logs)
    SELECT d.job, d.slot, false, false, d.owner, d.generation, d.lease_name, d.attempts,
           d.started_at, greatest(d.ended, d.started_at), false, false, $10, d.error,
           CASE WHEN d.log = '' THEN '{}'::text[] ELSE ARRAY[d.log] END
      FROM d
     ORDER BY d.ord
    ON CONFLICT (lease_name, generation) WHERE lease_name <> '' DO NOTHING
    RETURNING {{template "runColumns"}}
),
row AS (
    SELECT * FROM r
    UNION ALL
    SELECT {{template "runColumns"}} FROM {{schema}}.runs
     -- lease_name <> '': runs_holding_idx's predicate.
     WHERE lease_name <> ''
       AND (lease_name, generation) IN (SELECT d.lease_name, d.generation FROM d
                                         WHERE NOT EXISTS (SELECT 1 FROM r WHERE r.lease_name = d.lease_name AND r.generation = d.generation))
)
SELECT row.*
  FROM row
  JOIN i ON i.lease_name = row.lease_name AND i.generation = row.generation
 ORDER BY i.ord
