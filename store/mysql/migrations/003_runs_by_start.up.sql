-- Version 3: a job's runs are listed by when they started, newest first
-- (store.Store.RunList), not by id: a run's row is written when it ends,
-- after the skips recorded while it ran. This index serves that order and
-- its paging, walked backwards from the cursor to the limit. As
-- 011_runs_by_start on PostgreSQL.
--
-- MySQL has no CREATE INDEX IF NOT EXISTS: the index is made only when
-- missing, so a run cut off after it (before its version was recorded)
-- completes on the next.
SET @cronfence_ddl = (
    SELECT IF(count(*) = 0,
              'CREATE INDEX {{prefix}}runs_job_started ON {{prefix}}runs (job, started_at, id)',
              'DO 0')
      FROM information_schema.statistics
     WHERE table_schema = DATABASE() AND table_name = '{{prefix}}runs' AND index_name = '{{prefix}}runs_job_started');
PREPARE cronfence_ddl FROM @cronfence_ddl;
EXECUTE cronfence_ddl;
DEALLOCATE PREPARE cronfence_ddl;
