-- Reverses 002_alert_ack.up.sql, where the columns are there.
-- {{prefix}}schema_migrations belongs to the migration runner: whoever
-- applies this by hand also deletes its row for version 2.
SET @cronfence_ddl = (SELECT IF(count(*) > 0,
    'ALTER TABLE {{prefix}}alerts
        DROP CONSTRAINT {{prefix}}alerts_acknowledged,
        DROP COLUMN acknowledged_note,
        DROP COLUMN acknowledged_at,
        DROP COLUMN acknowledged_by,
        DROP COLUMN fingerprint',
    'DO 0')
    FROM information_schema.columns
    WHERE table_schema = DATABASE() AND table_name = '{{prefix}}alerts' AND column_name = 'fingerprint');
PREPARE cronfence_ddl FROM @cronfence_ddl;
EXECUTE cronfence_ddl;
DEALLOCATE PREPARE cronfence_ddl;
