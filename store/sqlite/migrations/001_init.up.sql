-- cronfence SQLite schema, version 1: leases, slot claims, job state and run
-- history.
--
-- Every instant is an INTEGER of Unix microseconds, UTC. Tables are STRICT so
-- a value of the wrong type is an error instead of a silent conversion.
--
-- Every name begins with cronfence_: handlers keep their own tables in this
-- file, to fence their writes in the same transaction, and a table of theirs
-- called runs or leases must not collide with ours.

-- One row per lease name. Rows are never deleted: release only expires them,
-- so the generation (the fencing token) of a name never goes back. There is
-- no liveness key as on PostgreSQL: every process is on this host and holds
-- no session to watch, so a dead owner's lease waits for its expiry.
CREATE TABLE cronfence_leases (
    name        TEXT    NOT NULL PRIMARY KEY,
    owner       TEXT    NOT NULL,
    generation  INTEGER NOT NULL CHECK (generation >= 1),
    acquired_at INTEGER NOT NULL,
    renewed_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL
) STRICT;

-- One row per (job, intended occurrence): the claim that makes a slot run
-- once. lease_name and generation name the lease holding that guards a
-- running claim; once it expires the slot may be claimed again. A slot that
-- came due while another run held the job's lease is recorded skipped (final)
-- or buffered (to run when that run ends), at generation 0 and attempts 0:
-- it never ran.
CREATE TABLE cronfence_slots (
    job         TEXT    NOT NULL,
    slot        INTEGER NOT NULL,
    status      TEXT    NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'skipped', 'buffered')),
    owner       TEXT    NOT NULL,
    lease_name  TEXT    NOT NULL,
    generation  INTEGER NOT NULL CHECK (generation >= 0),
    attempts    INTEGER NOT NULL CHECK (attempts >= 0),
    started_at  INTEGER NOT NULL,
    finished_at INTEGER,
    PRIMARY KEY (job, slot)
) STRICT;

-- The buffered slots of a job (overlap policy buffer-one): a claim checks
-- whether one exists and SlotFinish reports the earliest, without walking
-- the job's whole history in the primary key.
-- Running slots, for the scan of interrupted runs.
CREATE INDEX cronfence_slots_running ON cronfence_slots (slot) WHERE status = 'running';

CREATE INDEX cronfence_slots_buffered ON cronfence_slots (job, slot) WHERE status = 'buffered';

-- One row per job that has a state: the pause override every replica reads
-- before claiming. enabled_override NULL follows the job's declared value.
CREATE TABLE cronfence_job_state (
    job              TEXT    NOT NULL PRIMARY KEY,
    enabled_override INTEGER CHECK (enabled_override IN (0, 1)),
    override_by      TEXT    NOT NULL,
    override_at      INTEGER NOT NULL,
    note             TEXT    NOT NULL DEFAULT ''
) STRICT;

-- One row per execution or recorded skip. AUTOINCREMENT keeps ids from ever
-- being reused after a prune, so paging by id stays stable.
CREATE TABLE cronfence_runs (
    id          INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    job         TEXT    NOT NULL,
    slot        INTEGER,
    manual      INTEGER NOT NULL CHECK (manual IN (0, 1)),
    catch_up    INTEGER NOT NULL CHECK (catch_up IN (0, 1)),
    owner       TEXT    NOT NULL,
    generation  INTEGER NOT NULL CHECK (generation >= 0),
    attempt     INTEGER NOT NULL CHECK (attempt >= 0),
    started_at  INTEGER NOT NULL,
    finished_at INTEGER NOT NULL,
    success     INTEGER NOT NULL CHECK (success IN (0, 1)),
    skipped     INTEGER NOT NULL CHECK (skipped IN (0, 1)),
    reason      TEXT    NOT NULL,
    error       TEXT    NOT NULL,
    logs        TEXT    NOT NULL CHECK (json_valid(logs) AND json_type(logs) = 'array')
) STRICT;

-- RunList filters by job newest first, and Prune keeps each job's greatest id.
CREATE INDEX cronfence_runs_job_id ON cronfence_runs (job, id);
