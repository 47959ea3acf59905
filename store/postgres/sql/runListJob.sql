-- runListJob.sql: one job's runs, through runs_job_id_idx. $1 job, $2
-- before id (math.MaxInt64 for the newest), $3 limit.
SELECT {{template "runColumns"}} FROM {{schema}}.runs
 WHERE job = $1 AND id < $2
 ORDER BY id DESC
 LIMIT $3
