-- scheduleChanges.sql reads, in one statement (one snapshot), the newest
-- and oldest sequence numbers of the change log and a page of it after
-- $1, oldest first, at most $2: the page as one JSON array of rows, each
-- a JSON array of the scheduleChangeColumns (read as monitorSnapshot's
-- parts are). The numbers commit in order, so the page holds every change
-- after $1 up to its last.
SELECT coalesce((SELECT max(seq) FROM {{schema}}.schedule_changes), 0),
       coalesce((SELECT min(seq) FROM {{schema}}.schedule_changes), 0),
       (SELECT coalesce(json_agg(json_build_array({{template "scheduleChangeColumns" args "row" "ch"}}) ORDER BY ch.seq), '[]')::text
          FROM (SELECT * FROM {{schema}}.schedule_changes WHERE seq > $1 ORDER BY seq LIMIT $2) ch)
