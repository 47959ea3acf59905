-- backfillCancel.sql ends backfill $1, cancelled by $2, if it runs, and
-- returns it; no row when it had ended (the caller reads it:
-- backfillGet.sql).
--
-- $1 id, $2 by, $3 pinned now or NULL.
UPDATE {{schema}}.backfills b
   SET state = 'cancelled', finished_at = c.now, updated_at = c.now, cancelled_by = $2
  FROM (SELECT coalesce($3::timestamptz, clock_timestamp()) AS now) c
 WHERE b.id = $1 AND b.state = 'running'
RETURNING {{template "backfillColumns"}}
