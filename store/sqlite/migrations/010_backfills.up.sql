-- Version 10: backfills (store.Backfills), requests to run the slots of a
-- range that never ran, and their progress. As 015_backfills on
-- PostgreSQL.

-- One row per backfill. AUTOINCREMENT: an id is never used twice. The
-- range is [range_from, range_to); instants are microseconds since the
-- epoch. cursor_slot is the last slot handled (NULL before the first);
-- counts the slots handled by what happened to them (store.BackfillCounts
-- as a JSON object). finished_at is set when the backfill is done or
-- cancelled, and only then. driver, created_by and cancelled_by are
-- names, empty when none.
CREATE TABLE cronfence_backfills (
    id             INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    job            TEXT    NOT NULL,
    range_from     INTEGER NOT NULL,
    range_to       INTEGER NOT NULL,
    include_failed INTEGER NOT NULL CHECK (include_failed IN (0, 1)),
    rate           INTEGER NOT NULL CHECK (rate >= 0),
    total          INTEGER NOT NULL CHECK (total >= 0),
    state          TEXT    NOT NULL CHECK (state IN ('running', 'done', 'cancelled')),
    cursor_slot    INTEGER,
    counts         TEXT    NOT NULL CHECK (json_valid(counts) AND json_type(counts) = 'object'),
    driver         TEXT    NOT NULL,
    created_by     TEXT    NOT NULL,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    finished_at    INTEGER,
    cancelled_by   TEXT    NOT NULL,
    CHECK (range_to > range_from),
    CHECK ((finished_at IS NULL) = (state = 'running'))
) STRICT;
-- One running backfill a job. Writes hold the file's write lock, so the
-- store's check before its insert decides; this index is the database's
-- own word on it.
CREATE UNIQUE INDEX cronfence_backfills_running ON cronfence_backfills (job) WHERE state = 'running';
-- BackfillList of one job, newest first.
CREATE INDEX cronfence_backfills_job ON cronfence_backfills (job, id);
