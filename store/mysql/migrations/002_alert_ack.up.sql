-- Version 2: operators acknowledge alerts (Store.AlertAcknowledge).
-- fingerprint is what the alert reports without its measures, as its
-- raiser gives it (store.AlertRaiseParams.Fingerprint): a raise that
-- changes it ends the acknowledgement. acknowledged_at is NULL while the
-- alert is not acknowledged; who and why go with it. As 010_alert_ack on
-- PostgreSQL.
--
-- One ALTER TABLE adds every column at once (a DDL statement either
-- happens or not). It runs only where the columns are missing, so a run cut
-- off after it and before its version was recorded is completed by the
-- next: MySQL 8 has no ADD COLUMN IF NOT EXISTS (MariaDB has), so the
-- statement is chosen by a look at information_schema and prepared.
SET @cronfence_ddl = (SELECT IF(count(*) = 0,
    'ALTER TABLE {{prefix}}alerts
        ADD COLUMN fingerprint       VARBINARY(200) NOT NULL DEFAULT '''',
        ADD COLUMN acknowledged_by   VARBINARY(200) NULL,
        ADD COLUMN acknowledged_at   DATETIME(6)    NULL,
        ADD COLUMN acknowledged_note TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
        ADD CONSTRAINT {{prefix}}alerts_acknowledged CHECK ((acknowledged_by IS NULL) = (acknowledged_at IS NULL))',
    'DO 0')
    FROM information_schema.columns
    WHERE table_schema = DATABASE() AND table_name = '{{prefix}}alerts' AND column_name = 'fingerprint');
PREPARE cronfence_ddl FROM @cronfence_ddl;
EXECUTE cronfence_ddl;
DEALLOCATE PREPARE cronfence_ddl;
