-- backfillGet.sql: the backfill $1.
SELECT {{template "backfillColumns"}} FROM {{schema}}.backfills WHERE id = $1
