-- Version 5: a stored schedule's time policies: its catch-up policy
-- (store.ScheduleSettings.CatchUp: empty for the default, none, latest or
-- all) and, with all, how many of its slots back catch-up looks
-- (MaxCatchUp; 0 for the default), and its jitter (the bound of each
-- slot's start delay, in nanoseconds; 0 for none). And a pause that ends
-- by itself: job_state.override_until (NULL: until changed). As 013_time_policies
-- on PostgreSQL. Added only where missing (see 002_alert_ack): MySQL's
-- DDL does not roll back, and the three columns come in one statement.
SET @cronfence_ddl = (SELECT IF(count(*) = 0,
    'ALTER TABLE {{prefix}}schedules
         ADD COLUMN catch_up VARBINARY(16) NOT NULL DEFAULT '''' CHECK (catch_up IN ('''', ''none'', ''latest'', ''all'')),
         ADD COLUMN max_catch_up INT NOT NULL DEFAULT 0 CHECK (max_catch_up >= 0),
         ADD COLUMN jitter_ns BIGINT NOT NULL DEFAULT 0 CHECK (jitter_ns >= 0)',
    'DO 0')
    FROM information_schema.columns
    WHERE table_schema = DATABASE() AND table_name = '{{prefix}}schedules' AND column_name = 'catch_up');
PREPARE cronfence_ddl FROM @cronfence_ddl;
EXECUTE cronfence_ddl;
DEALLOCATE PREPARE cronfence_ddl;
SET @cronfence_ddl = (SELECT IF(count(*) = 0,
    'ALTER TABLE {{prefix}}job_state ADD COLUMN override_until DATETIME(6) NULL',
    'DO 0')
    FROM information_schema.columns
    WHERE table_schema = DATABASE() AND table_name = '{{prefix}}job_state' AND column_name = 'override_until');
PREPARE cronfence_ddl FROM @cronfence_ddl;
EXECUTE cronfence_ddl;
DEALLOCATE PREPARE cronfence_ddl;
