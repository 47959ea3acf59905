-- alertRaise.sql opens the alert or, when one of (kind, subject) is open,
-- refreshes it. The partial unique index is the arbiter: of replicas racing,
-- one inserts and the others wait for its commit and then update that row.
-- xmax is 0 on a row version this statement inserted and the updating
-- transaction's id on one it updated (the row is locked before it is
-- updated), which is how the statement tells the two apart in one round
-- trip.
--
-- A refresh with another fingerprint ends the alert's acknowledgement: it
-- changed. old locks the open row before the insert reads it (the insert's
-- source joins it), and reads it as the latest commit left it, so the
-- caller learns the acknowledgement it ended, if any: of replicas racing,
-- the second waits for the first's lock and finds it ended already.
--
-- $1 kind, $2 subject, $3 message, $4 details as JSON text, $5 raised by,
-- $6 fingerprint, $7 pinned now or NULL.
WITH c AS (SELECT coalesce($7::timestamptz, now()) AS now),
old AS (
    SELECT id, fingerprint, acknowledged_by, acknowledged_at, acknowledged_note
      FROM {{schema}}.alerts
     WHERE kind = $1 AND subject = $2 AND resolved_at IS NULL
       FOR UPDATE
),
up AS (
    INSERT INTO {{schema}}.alerts AS a (kind, subject, message, details, raised_by, raised_at, last_seen_at, fingerprint)
    SELECT $1, $2, $3, $4::text::jsonb, $5, c.now, c.now, $6
      FROM c LEFT JOIN old ON true
    ON CONFLICT (kind, subject) WHERE resolved_at IS NULL DO UPDATE
       SET message           = EXCLUDED.message,
           details           = EXCLUDED.details,
           last_seen_at      = EXCLUDED.last_seen_at,
           fingerprint       = EXCLUDED.fingerprint,
           acknowledged_by   = CASE WHEN a.fingerprint = EXCLUDED.fingerprint THEN a.acknowledged_by END,
           acknowledged_at   = CASE WHEN a.fingerprint = EXCLUDED.fingerprint THEN a.acknowledged_at END,
           acknowledged_note = CASE WHEN a.fingerprint = EXCLUDED.fingerprint THEN a.acknowledged_note ELSE '' END
    RETURNING a.xmax = 0 AS raised, {{template "alertColumns"}}
)
SELECT up.*, e.acknowledged_by, e.acknowledged_at, e.acknowledged_note
  FROM up
  LEFT JOIN old e ON e.id = up.id AND e.acknowledged_at IS NOT NULL AND e.fingerprint <> up.fingerprint
