-- Version 4: stored schedules (store.Schedules), jobs that live in the
-- database and change while replicas run, beside the jobs declared in code
-- or a config file. As 012_schedules on PostgreSQL. The statements are
-- idempotent, as version 1's: a run cut off halfway is completed by the
-- next.

-- One row per schedule. AUTO_INCREMENT ids are never used twice (InnoDB
-- keeps the counter across restarts since MySQL 8 and MariaDB 10.2), so a
-- schedule deleted and created again under its name is a new schedule
-- with a new id. Durations are nanoseconds, as Go's time.Duration. args is
-- the handler's arguments (NULL when none); version grows by one at every
-- update.
CREATE TABLE IF NOT EXISTS {{prefix}}schedules (
    id                 BIGINT         NOT NULL AUTO_INCREMENT PRIMARY KEY,
    name               VARBINARY(200) NOT NULL,
    spec               TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    time_zone          VARBINARY(200) NOT NULL,
    kind               VARBINARY(200) NOT NULL,
    args               MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    overlap            VARBINARY(16)  NOT NULL,
    catch_up_window_ns BIGINT         NOT NULL CHECK (catch_up_window_ns >= 0),
    lease_ttl_ns       BIGINT         NOT NULL CHECK (lease_ttl_ns >= 0),
    timeout_ns         BIGINT         NOT NULL CHECK (timeout_ns >= 0),
    deadline_ns        BIGINT         NOT NULL CHECK (deadline_ns >= 0),
    max_attempts       BIGINT         NOT NULL CHECK (max_attempts >= 0),
    retry_backoff_ns   BIGINT         NOT NULL CHECK (retry_backoff_ns >= 0),
    disabled           BOOLEAN        NOT NULL,
    version            BIGINT         NOT NULL CHECK (version >= 1),
    created_at         DATETIME(6)    NOT NULL,
    created_by         VARBINARY(200) NOT NULL,
    updated_at         DATETIME(6)    NOT NULL,
    updated_by         VARBINARY(200) NOT NULL,
    UNIQUE KEY {{prefix}}schedules_name (name),
    -- The kinds stored schedules name (kind_unknown).
    KEY {{prefix}}schedules_kind (kind)
) ENGINE = InnoDB;

-- The change log: one row per create, update and delete, written in the
-- transaction of the change, with the settings before and after it (JSON
-- of store.ScheduleSettings; NULL before a create and after a delete).
-- seq is given out by {{prefix}}schedule_seq below, one more each change.
CREATE TABLE IF NOT EXISTS {{prefix}}schedule_changes (
    seq             BIGINT         NOT NULL PRIMARY KEY CHECK (seq >= 1),
    action          VARBINARY(8)   NOT NULL CHECK (action IN ('create', 'update', 'delete')),
    name            VARBINARY(200) NOT NULL,
    schedule_id     BIGINT         NOT NULL,
    version         BIGINT         NOT NULL CHECK (version >= 1),
    changed_by      VARBINARY(200) NOT NULL,
    changed_at      DATETIME(6)    NOT NULL,
    settings_before MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    settings_after  MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    -- ScheduleAudit of one schedule, newest first.
    KEY {{prefix}}schedule_changes_name (name, seq)
) ENGINE = InnoDB;

-- The last sequence number given out: one row, which every schedule write
-- locks first (SELECT ... FOR UPDATE) and sets last. Writes take turns
-- behind it, so a change's number is given out, and committed, after the
-- number before it has committed: a reader of the log never sees n + 1
-- and then n, as AUTO_INCREMENT would let it (InnoDB hands out n and
-- n + 1 to two transactions, and the second may commit first).
CREATE TABLE IF NOT EXISTS {{prefix}}schedule_seq (
    id  TINYINT NOT NULL PRIMARY KEY CHECK (id = 1),
    seq BIGINT  NOT NULL CHECK (seq >= 0)
) ENGINE = InnoDB;
INSERT IGNORE INTO {{prefix}}schedule_seq (id, seq) VALUES (1, 0);

-- The handler kinds each replica runs stored schedules of (RegisterKind),
-- kept beside its jobs. Added only where missing (see 002_alert_ack).
SET @cronfence_ddl = (SELECT IF(count(*) = 0,
    'ALTER TABLE {{prefix}}replicas ADD COLUMN kinds MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT (''[]'')',
    'DO 0')
    FROM information_schema.columns
    WHERE table_schema = DATABASE() AND table_name = '{{prefix}}replicas' AND column_name = 'kinds');
PREPARE cronfence_ddl FROM @cronfence_ddl;
EXECUTE cronfence_ddl;
DEALLOCATE PREPARE cronfence_ddl;
