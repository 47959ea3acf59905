-- scheduleAudit.sql: the change log newest first, before sequence number
-- $1, at most $2.
SELECT {{template "scheduleChangeColumns" args "row" "ch"}} FROM {{schema}}.schedule_changes ch
 WHERE ch.seq < $1
 ORDER BY ch.seq DESC
 LIMIT $2
