-- Version 6: a stored schedule's exclusion windows (store.ScheduleSettings.
-- Exclude): a JSON array of entries, NULL for none. As 014_exclusions on
-- PostgreSQL. Added only where missing (see 002_alert_ack): MySQL's DDL
-- does not roll back.
SET @cronfence_ddl = (SELECT IF(count(*) = 0,
    'ALTER TABLE {{prefix}}schedules ADD COLUMN exclude LONGTEXT NULL CHECK (exclude IS NULL OR json_type(exclude) = ''ARRAY'')',
    'DO 0')
    FROM information_schema.columns
    WHERE table_schema = DATABASE() AND table_name = '{{prefix}}schedules' AND column_name = 'exclude');
PREPARE cronfence_ddl FROM @cronfence_ddl;
EXECUTE cronfence_ddl;
DEALLOCATE PREPARE cronfence_ddl;
