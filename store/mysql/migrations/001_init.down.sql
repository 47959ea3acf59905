-- Reverses 001_init.up.sql. {{prefix}}schema_migrations belongs to the
-- migration runner: whoever applies this by hand also deletes its row for
-- version 1.
DROP PROCEDURE IF EXISTS {{prefix}}complete;
DROP PROCEDURE IF EXISTS {{prefix}}fence;
DROP TABLE IF EXISTS {{prefix}}alerts;
DROP TABLE IF EXISTS {{prefix}}replicas;
DROP TABLE IF EXISTS {{prefix}}jobs;
DROP TABLE IF EXISTS {{prefix}}runs;
DROP TABLE IF EXISTS {{prefix}}job_state;
DROP TABLE IF EXISTS {{prefix}}slots;
DROP TABLE IF EXISTS {{prefix}}leases;
