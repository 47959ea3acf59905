-- scheduleDelete.sql deletes the schedule $1 if it is at version $2 (any
-- version when $2 is 0) and writes its change (before: its settings) and a
-- notice of it, behind scheduleLock.sql in one transaction; it returns the
-- schedule as it was. When the schedule is at another version it deletes
-- nothing and returns it as it is, written false; when there is none, no
-- row. Its runs and slots stay.
--
-- $1 name, $2 the version read or 0, $3 by, $4 pinned now or NULL.
WITH c AS (SELECT coalesce($4::timestamptz, clock_timestamp()) AS now),
cur AS (SELECT * FROM {{schema}}.schedules WHERE name = $1),
w AS (
    DELETE FROM {{schema}}.schedules s
     WHERE s.name = $1 AND ($2::bigint = 0 OR s.version = $2::bigint)
    RETURNING s.*
),
seq AS (
    UPDATE {{schema}}.schedule_seq SET seq = seq + 1 WHERE id = 1 AND EXISTS (SELECT FROM w) RETURNING seq
),
log AS (
    INSERT INTO {{schema}}.schedule_changes (seq, action, name, schedule_id, version, changed_by, changed_at, settings_before, settings_after)
    SELECT seq.seq, 'delete', w.name, w.id, w.version, $3, c.now, {{template "scheduleSettings" args "row" "w"}}, NULL
      FROM w, seq, c
    RETURNING seq, name
),
{{template "scheduleNotice"}}
SELECT true, {{template "scheduleColumns" args "row" "w"}} FROM w CROSS JOIN (SELECT count(*) FROM notice) told
UNION ALL
SELECT false, {{template "scheduleColumns" args "row" "cur"}} FROM cur WHERE NOT EXISTS (SELECT FROM w)
