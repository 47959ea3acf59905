-- Back to version 11: no stored schedules.
ALTER TABLE {{schema}}.replicas DROP COLUMN kinds;
DROP TABLE {{schema}}.schedule_seq;
DROP TABLE {{schema}}.schedule_changes;
DROP TABLE {{schema}}.schedules;
