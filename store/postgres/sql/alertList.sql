-- alertList.sql: $1 open only, $2 kind or empty for all, $3 subject or empty
-- for all, $4 limit.
SELECT {{template "alertColumns"}} FROM {{schema}}.alerts
 WHERE (NOT $1 OR resolved_at IS NULL) AND ($2 = '' OR kind = $2) AND ($3 = '' OR subject = $3)
 ORDER BY id DESC
 LIMIT $4
