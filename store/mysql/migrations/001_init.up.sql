-- cronfence MySQL/MariaDB schema, version 1: the same tables as the
-- PostgreSQL and SQLite stores at their current versions (leases, slots,
-- job state, runs, jobs, the replica registry and alerts), and the fence
-- procedures for clients other than the Go package.
--
-- {{prefix}} is Config.Prefix ("cronfence_" by default): every name begins
-- with it, so a handler's own tables in the same database cannot collide
-- with the store's. Names are VARBINARY: compared byte for byte, as
-- PostgreSQL's text under the C collation and SQLite compare them (a
-- PAD SPACE collation would make "a" and "a " one job). Instants are
-- DATETIME(6) in UTC, written from UTC_TIMESTAMP(6) or the Go store's
-- pinned clock. The statements are idempotent (IF NOT EXISTS), because
-- MySQL commits each DDL statement on its own: a migration cut off halfway
-- is completed by the next run.

-- One row per lease name, never deleted: release only expires it, so the
-- generation (the fencing token) of a name never goes back. live_key is the
-- owner's liveness lock (GET_LOCK 'cronfence.live.<key>'), NULL when none.
CREATE TABLE IF NOT EXISTS {{prefix}}leases (
    name        VARBINARY(200) NOT NULL PRIMARY KEY,
    owner       VARBINARY(200) NOT NULL,
    generation  BIGINT         NOT NULL CHECK (generation >= 1),
    acquired_at DATETIME(6)    NOT NULL,
    renewed_at  DATETIME(6)    NOT NULL,
    expires_at  DATETIME(6)    NOT NULL,
    live_key    BIGINT         NULL
) ENGINE = InnoDB;

-- One row per (job, intended occurrence): the claim that makes a slot run
-- once. retry_until: a failed slot is open to a retry until then (the job's
-- next slot); NULL, never.
CREATE TABLE IF NOT EXISTS {{prefix}}slots (
    job         VARBINARY(200) NOT NULL,
    slot        DATETIME(6)    NOT NULL,
    status      VARCHAR(16)    NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'skipped', 'buffered')),
    owner       VARBINARY(200) NOT NULL,
    lease_name  VARBINARY(200) NOT NULL,
    generation  BIGINT         NOT NULL CHECK (generation >= 0),
    attempts    INT            NOT NULL CHECK (attempts >= 0),
    started_at  DATETIME(6)    NOT NULL,
    finished_at DATETIME(6)    NULL,
    retry_until DATETIME(6)    NULL,
    PRIMARY KEY (job, slot),
    -- The scan of interrupted runs and open retries, and a job's buffered
    -- slot: MySQL has no partial indexes, so the status leads.
    KEY {{prefix}}slots_status (status, slot),
    KEY {{prefix}}slots_job_status (job, status, slot)
) ENGINE = InnoDB;

-- The pause override every replica reads before claiming. NULL follows the
-- job's declared value.
CREATE TABLE IF NOT EXISTS {{prefix}}job_state (
    job              VARBINARY(200) NOT NULL PRIMARY KEY,
    enabled_override BOOLEAN        NULL,
    override_by      VARBINARY(200) NOT NULL,
    override_at      DATETIME(6)    NOT NULL,
    note             TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL
) ENGINE = InnoDB;

-- One row per execution or recorded skip. AUTO_INCREMENT ids are not
-- reused after a prune on InnoDB (the counter is persisted since MySQL 8
-- and MariaDB 10.6's InnoDB keeps it too). A holding (lease_name,
-- generation) has at most one row: holding_name is lease_name, NULL for
-- the skips and lease-less runs ('') that the unique key must not cover
-- (MySQL has no partial unique index; NULLs never collide).
CREATE TABLE IF NOT EXISTS {{prefix}}runs (
    id           BIGINT         NOT NULL AUTO_INCREMENT PRIMARY KEY,
    job          VARBINARY(200) NOT NULL,
    slot         DATETIME(6)    NULL,
    manual       BOOLEAN        NOT NULL,
    catch_up     BOOLEAN        NOT NULL,
    owner        VARBINARY(200) NOT NULL,
    generation   BIGINT         NOT NULL CHECK (generation >= 0),
    lease_name   VARBINARY(200) NOT NULL DEFAULT '',
    attempt      INT            NOT NULL CHECK (attempt >= 0),
    started_at   DATETIME(6)    NOT NULL,
    finished_at  DATETIME(6)    NOT NULL,
    success      BOOLEAN        NOT NULL,
    skipped      BOOLEAN        NOT NULL,
    reason       TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    error        TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    logs         MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    holding_name VARBINARY(200) AS (NULLIF(lease_name, '')) STORED,
    UNIQUE KEY {{prefix}}runs_holding (holding_name, generation),
    KEY {{prefix}}runs_job_id (job, id)
) ENGINE = InnoDB;

-- One row per job ever registered: when a replica first registered it.
CREATE TABLE IF NOT EXISTS {{prefix}}jobs (
    job           VARBINARY(200) NOT NULL PRIMARY KEY,
    first_seen_at DATETIME(6)    NOT NULL
) ENGINE = InnoDB;

-- One row per live scheduler, upserted on every heartbeat.
CREATE TABLE IF NOT EXISTS {{prefix}}replicas (
    owner           VARBINARY(200) NOT NULL PRIMARY KEY,
    host            TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    pid             BIGINT         NOT NULL CHECK (pid >= 0),
    version         TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    started_at      DATETIME(6)    NOT NULL,
    heartbeat_at    DATETIME(6)    NOT NULL,
    clock_offset_ns BIGINT         NOT NULL,
    timers          BOOLEAN        NOT NULL,
    jobs            MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL
) ENGINE = InnoDB;

-- One row per alert, open while resolved_at is NULL. open_key is 1 while
-- open and NULL once resolved, so the unique key allows one open alert per
-- (kind, subject) and any number of resolved ones.
CREATE TABLE IF NOT EXISTS {{prefix}}alerts (
    id           BIGINT         NOT NULL AUTO_INCREMENT PRIMARY KEY,
    kind         VARBINARY(64)  NOT NULL,
    subject      VARBINARY(200) NOT NULL,
    message      TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    details      MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    raised_by    VARBINARY(200) NOT NULL,
    raised_at    DATETIME(6)    NOT NULL,
    last_seen_at DATETIME(6)    NOT NULL,
    resolved_at  DATETIME(6)    NULL,
    open_key     TINYINT AS (IF(resolved_at IS NULL, 1, NULL)) STORED,
    UNIQUE KEY {{prefix}}alerts_open (kind, subject, open_key),
    KEY {{prefix}}alerts_resolved (resolved_at)
) ENGINE = InnoDB;

-- For clients other than the Go package (a job's mysql shell, another
-- language), fencing and completing as statements inside the client's own
-- transaction:
--
--   START TRANSACTION;
--   CALL cronfence_fence('job:daily-close', 7);     -- or cronfence_complete
--   ... the job's writes ...
--   COMMIT;
--
-- Each raises SQLSTATE 'CF001' when generation 7 no longer holds the lease
-- (the caller rolls back), and otherwise holds the lease row in share mode
-- until the transaction ends, so a takeover waits for the commit.
-- cronfence_complete also marks the slot that holding runs completed, so
-- the effect and the completion commit together.
DROP PROCEDURE IF EXISTS {{prefix}}fence;
CREATE PROCEDURE {{prefix}}fence(IN p_lease VARBINARY(200), IN p_generation BIGINT)
    MODIFIES SQL DATA
BEGIN
    DECLARE held INT;
    SELECT count(*) INTO held FROM {{prefix}}leases
     WHERE name = p_lease AND generation = p_generation AND expires_at > UTC_TIMESTAMP(6)
     LOCK IN SHARE MODE;
    IF held = 0 THEN
        SIGNAL SQLSTATE 'CF001' SET MESSAGE_TEXT = 'cronfence: lease no longer held at this generation';
    END IF;
END;
DROP PROCEDURE IF EXISTS {{prefix}}complete;
CREATE PROCEDURE {{prefix}}complete(IN p_lease VARBINARY(200), IN p_generation BIGINT)
    MODIFIES SQL DATA
BEGIN
    CALL {{prefix}}fence(p_lease, p_generation);
    -- Parameters are named p_: a parameter named like a column would be
    -- read in its place.
    UPDATE {{prefix}}slots SET status = 'completed', finished_at = UTC_TIMESTAMP(6)
     WHERE status = 'running' AND lease_name = p_lease AND generation = p_generation;
END;
