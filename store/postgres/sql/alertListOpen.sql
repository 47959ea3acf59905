-- alertListOpen.sql: the open alerts, as the absence checks read them at
-- every pass, through the partial index of open alerts; the general
-- alertList's optional filters would leave a generic plan
-- (postgres.TunePool) scanning every alert ever raised. $1 limit.
SELECT {{template "alertColumns"}} FROM {{schema}}.alerts
 WHERE resolved_at IS NULL
 ORDER BY id DESC
 LIMIT $1
