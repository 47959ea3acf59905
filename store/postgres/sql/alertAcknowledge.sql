-- alertAcknowledge.sql records an acknowledgement of the open alert of
-- (kind, subject), and of that alert only when an id is given. A raise
-- racing it waits for the row lock, and ends the acknowledgement if it
-- changes the alert.
--
-- $1 kind, $2 subject, $3 id or 0, $4 by, $5 note, $6 pinned now or NULL.
UPDATE {{schema}}.alerts
   SET acknowledged_by   = $4,
       acknowledged_at   = coalesce($6::timestamptz, now()),
       acknowledged_note = $5
 WHERE kind = $1 AND subject = $2 AND resolved_at IS NULL AND ($3::bigint = 0 OR id = $3::bigint)
RETURNING {{template "alertColumns"}}
