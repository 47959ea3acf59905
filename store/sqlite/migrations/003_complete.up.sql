-- Version 3: a handler can complete its slot inside its own transaction, a
-- run's end can be recorded again safely, and each job remembers when it was
-- first registered. As 004_complete on PostgreSQL.

-- The lease holding a run row was written under. A holding (lease name,
-- generation) ends once, so it has at most one run row: a finish retried
-- after its first attempt committed but its answer was lost finds the row
-- and writes no second one. Older rows, skips and runs made without a
-- lease have ''.
ALTER TABLE cronfence_runs ADD COLUMN lease_name TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX cronfence_runs_holding ON cronfence_runs (lease_name, generation) WHERE lease_name <> '';

-- One row per job ever registered: when a replica first registered it.
-- Catch-up never runs a slot from before then. Never pruned.
CREATE TABLE cronfence_jobs (
    job           TEXT    NOT NULL PRIMARY KEY,
    first_seen_at INTEGER NOT NULL
) STRICT;

-- For clients other than this Go package (the sqlite3 shell of a job
-- started by serve), fencing and completing as statements: inside
-- BEGIN IMMEDIATE, which holds the file's only write lock until COMMIT,
--
--   INSERT INTO cronfence_fence VALUES ('job:daily-close', 7);
--   INSERT INTO cronfence_complete VALUES ('job:daily-close', 7);
--
-- abort the statement with "cronfence: CF001 …" when generation 7 no longer
-- holds the lease (the caller rolls back); the second also marks the slot
-- that holding runs completed, so the effect and the completion commit
-- together. The clock is the host's (julianday('now'), to the millisecond),
-- as every process on one SQLite file shares it.
CREATE VIEW cronfence_fence (lease_name, generation) AS SELECT NULL, NULL WHERE 0;
CREATE TRIGGER cronfence_fence_insert INSTEAD OF INSERT ON cronfence_fence
BEGIN
    SELECT RAISE(ABORT, 'cronfence: CF001 lease no longer held at this generation')
     WHERE NOT EXISTS (SELECT 1 FROM cronfence_leases
                        WHERE name = NEW.lease_name AND generation = NEW.generation
                          AND expires_at > CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER));
END;
CREATE VIEW cronfence_complete (lease_name, generation) AS SELECT NULL, NULL WHERE 0;
CREATE TRIGGER cronfence_complete_insert INSTEAD OF INSERT ON cronfence_complete
BEGIN
    SELECT RAISE(ABORT, 'cronfence: CF001 lease no longer held at this generation')
     WHERE NOT EXISTS (SELECT 1 FROM cronfence_leases
                        WHERE name = NEW.lease_name AND generation = NEW.generation
                          AND expires_at > CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER));
    UPDATE cronfence_slots
       SET status = 'completed', finished_at = CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER)
     WHERE status = 'running' AND lease_name = NEW.lease_name AND generation = NEW.generation;
END;
