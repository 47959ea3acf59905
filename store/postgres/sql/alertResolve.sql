-- alertResolve.sql closes the open alert. A concurrent resolver waits for the
-- first's row lock, re-checks resolved_at IS NULL on the committed row, and
-- finds nothing to update.
--
-- $1 kind, $2 subject, $3 pinned now or NULL.
UPDATE {{schema}}.alerts
   SET resolved_at = coalesce($3::timestamptz, now())
 WHERE kind = $1 AND subject = $2 AND resolved_at IS NULL
RETURNING {{template "alertColumns"}}
