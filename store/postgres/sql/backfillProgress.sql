-- backfillProgress.sql records the progress of backfill $1 while it runs
-- and its cursor is not after $2 (a deposed driver, late, never moves it
-- back), and returns it; no row when it wrote nothing (the caller reads
-- the backfill: backfillGet.sql). With $5 the backfill ends, done.
--
-- $1 id, $2 cursor or NULL, $3 counts (JSON text), $4 driver, $5 done, $6
-- pinned now or NULL.
UPDATE {{schema}}.backfills b
   SET cursor_slot = $2::timestamptz, counts = $3::text::jsonb, driver = $4, updated_at = c.now,
       state = CASE WHEN $5::boolean THEN 'done' ELSE 'running' END,
       finished_at = CASE WHEN $5::boolean THEN c.now END
  FROM (SELECT coalesce($6::timestamptz, clock_timestamp()) AS now) c
 WHERE b.id = $1 AND b.state = 'running' AND (b.cursor_slot IS NULL OR b.cursor_slot <= $2::timestamptz)
RETURNING {{template "backfillColumns" }}
