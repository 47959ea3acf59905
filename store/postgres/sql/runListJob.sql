-- runListJob.sql: one job's runs, newest start first, through
-- runs_job_started_idx (migration 011). $1 job, $2 and $3 the cursor: only
-- rows before (started_at, id) in that order ('infinity' and any id for
-- the newest), $4 limit.
SELECT {{template "runColumns"}} FROM {{schema}}.runs
 WHERE job = $1 AND (started_at, id) < ($2, $3)
 ORDER BY started_at DESC, id DESC
 LIMIT $4
