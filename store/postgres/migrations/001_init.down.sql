DROP FUNCTION IF EXISTS {{schema}}.fence(text, bigint);
DROP TABLE IF EXISTS {{schema}}.runs;
DROP TABLE IF EXISTS {{schema}}.job_state;
DROP TABLE IF EXISTS {{schema}}.slots;
DROP TABLE IF EXISTS {{schema}}.leases;
