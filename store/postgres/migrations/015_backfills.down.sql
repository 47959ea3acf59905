-- Back to version 14: no backfills.
DROP TABLE {{schema}}.backfills;
