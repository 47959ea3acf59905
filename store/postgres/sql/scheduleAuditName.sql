-- scheduleAuditName.sql: the changes of the schedules named $1 (every one
-- ever created under the name) newest first, before sequence number $2, at
-- most $3, through schedule_changes_name_idx.
SELECT {{template "scheduleChangeColumns" args "row" "ch"}} FROM {{schema}}.schedule_changes ch
 WHERE ch.name = $1 AND ch.seq < $2
 ORDER BY ch.seq DESC
 LIMIT $3
