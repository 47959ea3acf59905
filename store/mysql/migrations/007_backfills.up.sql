-- Version 7: backfills (store.Backfills), requests to run the slots of a
-- range that never ran, and their progress. As 015_backfills on
-- PostgreSQL. The statement is idempotent, as version 1's: a run cut off
-- halfway is completed by the next.

-- One row per backfill. AUTO_INCREMENT ids are never used twice (see
-- 004_schedules). The range is [range_from, range_to). cursor_slot is the
-- last slot handled (NULL before the first); counts the slots handled by
-- what happened to them (store.BackfillCounts as a JSON object).
-- finished_at is set when the backfill is done or cancelled, and only
-- then. driver, created_by and cancelled_by are names, empty when none.
--
-- One running backfill a job: MySQL and MariaDB have no partial index, so
-- running_job is the job while the backfill runs and NULL once it ended,
-- and is unique (a unique index holds any number of NULLs). Of two
-- created at once, the second's insert waits for the first's and is
-- refused as a duplicate.
CREATE TABLE IF NOT EXISTS {{prefix}}backfills (
    id             BIGINT         NOT NULL AUTO_INCREMENT PRIMARY KEY,
    job            VARBINARY(200) NOT NULL,
    range_from     DATETIME(6)    NOT NULL,
    range_to       DATETIME(6)    NOT NULL,
    include_failed BOOLEAN        NOT NULL,
    rate           INT            NOT NULL CHECK (rate >= 0),
    total          INT            NOT NULL CHECK (total >= 0),
    state          VARBINARY(16)  NOT NULL CHECK (state IN ('running', 'done', 'cancelled')),
    cursor_slot    DATETIME(6)    NULL,
    counts         TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL CHECK (json_valid(counts) AND json_type(counts) = 'OBJECT'),
    driver         VARBINARY(200) NOT NULL,
    created_by     VARBINARY(200) NOT NULL,
    created_at     DATETIME(6)    NOT NULL,
    updated_at     DATETIME(6)    NOT NULL,
    finished_at    DATETIME(6)    NULL,
    cancelled_by   VARBINARY(200) NOT NULL,
    running_job    VARBINARY(200) GENERATED ALWAYS AS (IF(state = 'running', job, NULL)) STORED,
    CHECK (range_to > range_from),
    CHECK ((finished_at IS NULL) = (state = 'running')),
    UNIQUE KEY {{prefix}}backfills_running (running_job),
    -- BackfillList of one job, newest first.
    KEY {{prefix}}backfills_job (job, id)
) ENGINE = InnoDB;
