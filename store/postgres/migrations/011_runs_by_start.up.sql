-- A job's runs are listed by when they started, newest first
-- (store.Store.RunList), not by id: a run's row is written when it ends,
-- after the skips recorded while it ran. This index serves that order and
-- its paging, walked backwards from the cursor to the limit.
CREATE INDEX runs_job_started_idx ON {{schema}}.runs (job, started_at, id);
