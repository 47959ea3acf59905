-- scheduleCreate.sql writes a new schedule at version 1, its change (the
-- next sequence number) and a notice of it, behind scheduleLock.sql in one
-- transaction. When a schedule of that name exists it writes nothing and
-- returns that one, written false.
--
-- $1 name, $2 to $17 the settings (scheduleSettingArgs), $18 by, $19
-- pinned now or NULL.
WITH c AS (SELECT coalesce($19::timestamptz, clock_timestamp()) AS now),
cur AS (SELECT * FROM {{schema}}.schedules WHERE name = $1),
w AS (
    INSERT INTO {{schema}}.schedules (name, spec, time_zone, kind, args, overlap, catch_up_window_ns, lease_ttl_ns, timeout_ns,
                                      deadline_ns, max_attempts, retry_backoff_ns, disabled, catch_up, max_catch_up, jitter_ns, exclude,
                                      version, created_at, created_by, updated_at, updated_by)
    SELECT $1, $2, $3, $4, $5::text::json, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17::text::json, 1, c.now, $18, c.now, $18
      FROM c
     WHERE NOT EXISTS (SELECT FROM cur)
    ON CONFLICT (name) DO NOTHING
    RETURNING *
),
seq AS (
    UPDATE {{schema}}.schedule_seq SET seq = seq + 1 WHERE id = 1 AND EXISTS (SELECT FROM w) RETURNING seq
),
log AS (
    INSERT INTO {{schema}}.schedule_changes (seq, action, name, schedule_id, version, changed_by, changed_at, settings_before, settings_after)
    SELECT seq.seq, 'create', w.name, w.id, w.version, $18, c.now, NULL, {{template "scheduleSettings" args "row" "w"}}
      FROM w, seq, c
    RETURNING seq, name
),
{{template "scheduleNotice"}}
SELECT true, {{template "scheduleColumns" args "row" "w"}} FROM w CROSS JOIN (SELECT count(*) FROM notice) told
UNION ALL
SELECT false, {{template "scheduleColumns" args "row" "cur"}} FROM cur WHERE NOT EXISTS (SELECT FROM w)
