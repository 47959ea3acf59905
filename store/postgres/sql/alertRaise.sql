-- alertRaise.sql opens the alert or, when one of (kind, subject) is open,
-- refreshes it. The partial unique index is the arbiter: of replicas racing,
-- one inserts and the others wait for its commit and then update that row.
-- xmax is 0 on a row version this statement inserted and the updating
-- transaction's id on one it updated (ON CONFLICT DO UPDATE locks the row
-- first), which is how the statement tells the two apart in one round trip.
--
-- $1 kind, $2 subject, $3 message, $4 details as JSON text, $5 raised by,
-- $6 pinned now or NULL.
INSERT INTO {{schema}}.alerts AS a (kind, subject, message, details, raised_by, raised_at, last_seen_at)
SELECT $1, $2, $3, $4::text::jsonb, $5, c.now, c.now
  FROM (SELECT coalesce($6::timestamptz, now()) AS now) c
ON CONFLICT (kind, subject) WHERE resolved_at IS NULL DO UPDATE
   SET message      = EXCLUDED.message,
       details      = EXCLUDED.details,
       last_seen_at = EXCLUDED.last_seen_at
RETURNING a.xmax = 0, {{template "alertColumns"}}
