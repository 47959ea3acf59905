-- slotSkip.sql records slots nobody will run (see Store.SlotSkip): a slot
-- row, skipped and final, for each item whose slot has none and whose
-- After the database clock has reached, and a skip run row for each row so
-- inserted. ON CONFLICT DO NOTHING makes concurrent callers, and a claim,
-- record a slot once: whoever writes its row first decides. Only slot rows
-- are locked (no lease row), in the items' order, the claims' order.
-- notice tells every replica's listener the slots recorded (s, settled):
-- a replica waiting to claim one as a fallback (its preferred replica,
-- stalled, passed it over) drops it rather than send a claim that would
-- be refused skipped. Under overload those were one claim in eight.
--
-- $1 jobs, $2 slots, $3 lease names, $4 afters, $5 catch-up flags,
-- $6 reasons, $7 log lines (” for none), $8 owner, $9 pinned now or NULL.
WITH c AS (SELECT coalesce($9::timestamptz, now()) AS now),
i AS (
    SELECT *
      FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::timestamptz[], $5::boolean[], $6::text[], $7::text[])
           WITH ORDINALITY AS i(job, slot, lease_name, after, catch_up, reason, log, ord)
),
s AS (
    INSERT INTO {{schema}}.slots AS s (job, slot, status, owner, lease_name, generation, attempts, started_at, finished_at)
    SELECT i.job, i.slot, 'skipped', $8, i.lease_name, 0, 0, c.now, c.now
      FROM i
     CROSS JOIN c
     WHERE i.after <= c.now
     ORDER BY i.ord
    ON CONFLICT (job, slot) DO NOTHING
    RETURNING s.job, s.slot
),
r AS (
    INSERT INTO {{schema}}.runs (job, slot, manual, catch_up, owner, generation, attempt, started_at, finished_at,
                                 success, skipped, reason, error, logs)
    SELECT i.job, i.slot, false, i.catch_up, $8, 0, 0, c.now, c.now, true, true, i.reason, '',
           CASE WHEN i.log = '' THEN '{}'::text[] ELSE ARRAY[i.log] END
      FROM s
      JOIN i ON i.job = s.job AND i.slot = s.slot
     CROSS JOIN c
    RETURNING {{template "runColumns"}}
),
notice AS MATERIALIZED (
    {{template "notice" args "rows" "SELECT i.ord, 's' AS kind, i.job, i.slot, $8 AS owner FROM s JOIN i ON i.job = s.job AND i.slot = s.slot"}}
)
SELECT r.*
  FROM r
  JOIN i ON i.job = r.job AND i.slot = r.slot
 CROSS JOIN (SELECT count(*) FROM notice) told
 ORDER BY i.ord
