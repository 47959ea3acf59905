-- backfillList.sql: every job's backfills, newest first (store.Backfills.
-- BackfillList): the running ones only when $1, with an ID below $2, at
-- most $3. backfillListJob.sql is the same for one job.
SELECT {{template "backfillColumns"}} FROM {{schema}}.backfills
 WHERE (NOT $1 OR state = 'running') AND id < $2
 ORDER BY id DESC
 LIMIT $3
