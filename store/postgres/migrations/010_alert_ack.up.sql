-- Operators acknowledge alerts (Store.AlertAcknowledge). fingerprint is
-- what the alert reports without its measures, as its raiser gives it
-- (store.AlertRaiseParams.Fingerprint): a raise that changes it ends the
-- acknowledgement (alertRaise.sql). acknowledged_at is NULL while the alert
-- is not acknowledged; who and why go with it. A resolved alert keeps the
-- acknowledgement it had.
ALTER TABLE {{schema}}.alerts
    ADD COLUMN fingerprint       text        NOT NULL DEFAULT '',
    ADD COLUMN acknowledged_by   text,
    ADD COLUMN acknowledged_at   timestamptz,
    ADD COLUMN acknowledged_note text        NOT NULL DEFAULT '',
    ADD CONSTRAINT alerts_acknowledged_check CHECK ((acknowledged_by IS NULL) = (acknowledged_at IS NULL));
