-- Back to version 10: runs listed by id.
DROP INDEX {{schema}}.runs_job_started_idx;
