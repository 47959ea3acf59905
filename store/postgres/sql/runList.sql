-- runList.sql: $1 job or ” for all, $2 before id or 0, $3 limit.
SELECT {{template "runColumns"}} FROM {{schema}}.runs
 WHERE ($1 = '' OR job = $1) AND ($2 = 0 OR id < $2)
 ORDER BY id DESC
 LIMIT $3
