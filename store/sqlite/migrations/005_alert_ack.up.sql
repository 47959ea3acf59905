-- Version 5: operators acknowledge alerts (Store.AlertAcknowledge).
-- fingerprint is what the alert reports without its measures, as its
-- raiser gives it (store.AlertRaiseParams.Fingerprint): a raise that
-- changes it ends the acknowledgement. acknowledged_at (microseconds since
-- the epoch) is NULL while the alert is not acknowledged; who and why go
-- with it. As 010_alert_ack on PostgreSQL.
ALTER TABLE cronfence_alerts ADD COLUMN fingerprint TEXT NOT NULL DEFAULT '';
ALTER TABLE cronfence_alerts ADD COLUMN acknowledged_by TEXT;
ALTER TABLE cronfence_alerts ADD COLUMN acknowledged_at INTEGER
    CHECK ((acknowledged_by IS NULL) = (acknowledged_at IS NULL));
ALTER TABLE cronfence_alerts ADD COLUMN acknowledged_note TEXT NOT NULL DEFAULT '';
