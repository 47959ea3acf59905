-- scheduleList.sql: a page of schedules in name order (byte order: the
-- column is COLLATE "C"), after $1, at most $2.
SELECT {{template "scheduleColumns" args "row" "s"}} FROM {{schema}}.schedules s
 WHERE s.name > $1
 ORDER BY s.name
 LIMIT $2
