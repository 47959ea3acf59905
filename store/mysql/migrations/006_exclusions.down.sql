-- Reverses 006_exclusions.up.sql, where its column is there.
-- {{prefix}}schema_migrations belongs to the migration runner: whoever
-- applies this by hand also deletes its row for version 6.
SET @cronfence_ddl = (SELECT IF(count(*) > 0,
    'ALTER TABLE {{prefix}}schedules DROP COLUMN exclude',
    'DO 0')
    FROM information_schema.columns
    WHERE table_schema = DATABASE() AND table_name = '{{prefix}}schedules' AND column_name = 'exclude');
PREPARE cronfence_ddl FROM @cronfence_ddl;
EXECUTE cronfence_ddl;
DEALLOCATE PREPARE cronfence_ddl;
