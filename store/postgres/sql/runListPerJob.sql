-- runListPerJob.sql: each job's newest runs, through runs_job_id_idx, one
-- index scan a job. $1 jobs, $2 limit per job.
SELECT j.ord, r.*
  FROM unnest($1::text[]) WITH ORDINALITY AS j(job, ord)
 CROSS JOIN LATERAL (
       SELECT {{template "runColumns"}} FROM {{schema}}.runs
        WHERE job = j.job
        ORDER BY id DESC
        LIMIT $2) r
 ORDER BY j.ord, r.id DESC
