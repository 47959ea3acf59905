-- Version 7: stored schedules (store.Schedules), jobs that live in the
-- file and change while replicas run, beside the jobs declared in code or
-- a config file. As 012_schedules on PostgreSQL.

-- One row per schedule. AUTOINCREMENT: an id is never used twice, so a
-- schedule deleted and created again under its name is a new schedule
-- with a new id. Durations are nanoseconds, as Go's time.Duration;
-- instants microseconds since the epoch. args is the handler's arguments
-- (NULL when none); version grows by one at every update.
CREATE TABLE cronfence_schedules (
    id                 INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    name               TEXT    NOT NULL UNIQUE,
    spec               TEXT    NOT NULL,
    time_zone          TEXT    NOT NULL,
    kind               TEXT    NOT NULL,
    args               TEXT    CHECK (args IS NULL OR json_valid(args)),
    overlap            TEXT    NOT NULL,
    catch_up_window_ns INTEGER NOT NULL CHECK (catch_up_window_ns >= 0),
    lease_ttl_ns       INTEGER NOT NULL CHECK (lease_ttl_ns >= 0),
    timeout_ns         INTEGER NOT NULL CHECK (timeout_ns >= 0),
    deadline_ns        INTEGER NOT NULL CHECK (deadline_ns >= 0),
    max_attempts       INTEGER NOT NULL CHECK (max_attempts >= 0),
    retry_backoff_ns   INTEGER NOT NULL CHECK (retry_backoff_ns >= 0),
    disabled           INTEGER NOT NULL CHECK (disabled IN (0, 1)),
    version            INTEGER NOT NULL CHECK (version >= 1),
    created_at         INTEGER NOT NULL,
    created_by         TEXT    NOT NULL,
    updated_at         INTEGER NOT NULL,
    updated_by         TEXT    NOT NULL
) STRICT;
-- The kinds stored schedules name (kind_unknown).
CREATE INDEX cronfence_schedules_kind ON cronfence_schedules (kind);

-- The change log: one row per create, update and delete, written in the
-- transaction of the change, with the settings before and after it (JSON
-- of store.ScheduleSettings; NULL before a create and after a delete).
-- seq is given out by cronfence_schedule_seq below, one more each change.
CREATE TABLE cronfence_schedule_changes (
    seq             INTEGER NOT NULL PRIMARY KEY CHECK (seq >= 1),
    action          TEXT    NOT NULL CHECK (action IN ('create', 'update', 'delete')),
    name            TEXT    NOT NULL,
    schedule_id     INTEGER NOT NULL,
    version         INTEGER NOT NULL CHECK (version >= 1),
    changed_by      TEXT    NOT NULL,
    changed_at      INTEGER NOT NULL,
    settings_before TEXT    CHECK (settings_before IS NULL OR json_valid(settings_before)),
    settings_after  TEXT    CHECK (settings_after IS NULL OR json_valid(settings_after)),
    CHECK ((settings_before IS NULL) = (action = 'create') AND (settings_after IS NULL) = (action = 'delete'))
) STRICT;
-- ScheduleAudit of one schedule, newest first.
CREATE INDEX cronfence_schedule_changes_name ON cronfence_schedule_changes (name, seq);

-- The last sequence number given out: one row, which every schedule write
-- reads and sets (one writer at a time holds the file: numbers commit in
-- order, and a write rolled back gives its number back).
CREATE TABLE cronfence_schedule_seq (
    id  INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL CHECK (seq >= 0)
) STRICT;
INSERT INTO cronfence_schedule_seq (id, seq) VALUES (1, 0);

-- The handler kinds each replica runs stored schedules of (RegisterKind),
-- kept beside its jobs.
ALTER TABLE cronfence_replicas ADD COLUMN kinds TEXT NOT NULL DEFAULT '[]'
    CHECK (json_valid(kinds) AND json_type(kinds) = 'array');
