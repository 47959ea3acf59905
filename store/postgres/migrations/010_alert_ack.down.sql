-- Back to version 9: alerts cannot be acknowledged.
ALTER TABLE {{schema}}.alerts
    DROP CONSTRAINT alerts_acknowledged_check,
    DROP COLUMN acknowledged_note,
    DROP COLUMN acknowledged_at,
    DROP COLUMN acknowledged_by,
    DROP COLUMN fingerprint;
