-- scheduleUpdate.sql replaces the settings of the schedule $1 if it is at
-- version $20, one more version, and writes its change (before and after)
-- and a notice of it, behind scheduleLock.sql in one transaction. When the
-- schedule is at another version it writes nothing and returns it as it
-- is, written false; when there is none, no row.
--
-- $1 name, $2 to $17 the settings (scheduleSettingArgs), $18 by, $19
-- pinned now or NULL, $20 the version read.
WITH c AS (SELECT coalesce($19::timestamptz, clock_timestamp()) AS now),
cur AS (SELECT * FROM {{schema}}.schedules WHERE name = $1),
w AS (
    UPDATE {{schema}}.schedules s
       SET spec = $2, time_zone = $3, kind = $4, args = $5::text::json, overlap = $6, catch_up_window_ns = $7,
           lease_ttl_ns = $8, timeout_ns = $9, deadline_ns = $10, max_attempts = $11, retry_backoff_ns = $12, disabled = $13,
           catch_up = $14, max_catch_up = $15, jitter_ns = $16, exclude = $17::text::json, version = s.version + 1, updated_at = c.now, updated_by = $18
      FROM c
     WHERE s.name = $1 AND s.version = $20
    RETURNING s.*
),
seq AS (
    UPDATE {{schema}}.schedule_seq SET seq = seq + 1 WHERE id = 1 AND EXISTS (SELECT FROM w) RETURNING seq
),
log AS (
    INSERT INTO {{schema}}.schedule_changes (seq, action, name, schedule_id, version, changed_by, changed_at, settings_before, settings_after)
    SELECT seq.seq, 'update', w.name, w.id, w.version, $18, c.now,
           {{template "scheduleSettings" args "row" "cur"}}, {{template "scheduleSettings" args "row" "w"}}
      FROM w, cur, seq, c
    RETURNING seq, name
),
{{template "scheduleNotice"}}
SELECT true, {{template "scheduleColumns" args "row" "w"}} FROM w CROSS JOIN (SELECT count(*) FROM notice) told
UNION ALL
SELECT false, {{template "scheduleColumns" args "row" "cur"}} FROM cur WHERE NOT EXISTS (SELECT FROM w)
