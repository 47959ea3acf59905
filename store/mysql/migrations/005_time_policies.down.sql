-- Reverses 005_time_policies.up.sql, where its columns are there.
-- {{prefix}}schema_migrations belongs to the migration runner: whoever
-- applies this by hand also deletes its row for version 5.
SET @cronfence_ddl = (SELECT IF(count(*) > 0,
    'ALTER TABLE {{prefix}}schedules DROP COLUMN jitter_ns, DROP COLUMN max_catch_up, DROP COLUMN catch_up',
    'DO 0')
    FROM information_schema.columns
    WHERE table_schema = DATABASE() AND table_name = '{{prefix}}schedules' AND column_name = 'catch_up');
PREPARE cronfence_ddl FROM @cronfence_ddl;
EXECUTE cronfence_ddl;
DEALLOCATE PREPARE cronfence_ddl;
SET @cronfence_ddl = (SELECT IF(count(*) > 0,
    'ALTER TABLE {{prefix}}job_state DROP COLUMN override_until',
    'DO 0')
    FROM information_schema.columns
    WHERE table_schema = DATABASE() AND table_name = '{{prefix}}job_state' AND column_name = 'override_until');
PREPARE cronfence_ddl FROM @cronfence_ddl;
EXECUTE cronfence_ddl;
DEALLOCATE PREPARE cronfence_ddl;
