-- backfillListJob.sql: the backfills of job $1, newest first, through
-- backfills_job_idx: the running ones only when $2, with an ID below $3,
-- at most $4.
SELECT {{template "backfillColumns"}} FROM {{schema}}.backfills
 WHERE job = $1 AND (NOT $2 OR state = 'running') AND id < $3
 ORDER BY id DESC
 LIMIT $4
