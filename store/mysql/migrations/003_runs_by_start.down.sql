-- Reverses 003_runs_by_start.up.sql. Whoever applies it by hand also
-- deletes the row for version 3 of {{prefix}}schema_migrations. The index
-- is dropped only when there, so the file can run again.
SET @cronfence_ddl = (
    SELECT IF(count(*) > 0,
              'DROP INDEX {{prefix}}runs_job_started ON {{prefix}}runs',
              'DO 0')
      FROM information_schema.statistics
     WHERE table_schema = DATABASE() AND table_name = '{{prefix}}runs' AND index_name = '{{prefix}}runs_job_started');
PREPARE cronfence_ddl FROM @cronfence_ddl;
EXECUTE cronfence_ddl;
DEALLOCATE PREPARE cronfence_ddl;
