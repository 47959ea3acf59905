-- Version 6: a job's runs are listed by when they started, newest first
-- (store.Store.RunList), not by id: a run's row is written when it ends,
-- after the skips recorded while it ran. This index serves that order and
-- its paging, walked backwards from the cursor to the limit. As
-- 011_runs_by_start on PostgreSQL.
CREATE INDEX cronfence_runs_job_started ON cronfence_runs (job, started_at, id);
