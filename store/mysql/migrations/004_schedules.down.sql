-- Reverses 004_schedules.up.sql, where its tables and column are there.
-- {{prefix}}schema_migrations belongs to the migration runner: whoever
-- applies this by hand also deletes its row for version 4.
DROP TABLE IF EXISTS {{prefix}}schedule_seq;
DROP TABLE IF EXISTS {{prefix}}schedule_changes;
DROP TABLE IF EXISTS {{prefix}}schedules;
SET @cronfence_ddl = (SELECT IF(count(*) > 0,
    'ALTER TABLE {{prefix}}replicas DROP COLUMN kinds',
    'DO 0')
    FROM information_schema.columns
    WHERE table_schema = DATABASE() AND table_name = '{{prefix}}replicas' AND column_name = 'kinds');
PREPARE cronfence_ddl FROM @cronfence_ddl;
EXECUTE cronfence_ddl;
DEALLOCATE PREPARE cronfence_ddl;
