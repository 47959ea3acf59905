-- Stored schedules (store.Schedules): jobs that live in the database and
-- change while replicas run, beside the jobs declared in code or a config
-- file.
--
-- One row per schedule. id comes from an identity (a sequence), so it is
-- never used twice: a schedule deleted and created again under its name is
-- a new schedule with a new id. name is byte-ordered (COLLATE "C") for
-- ScheduleList's pages. Durations are nanoseconds, as Go's time.Duration.
-- args is the handler's arguments (NULL when none): json, not jsonb, so
-- that a handler gets them as they were given, byte for byte, as on the
-- other stores. version grows by one at every update.
CREATE TABLE {{schema}}.schedules (
    id                 bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name               text        COLLATE "C" NOT NULL UNIQUE,
    spec               text        NOT NULL,
    time_zone          text        NOT NULL,
    kind               text        NOT NULL,
    args               json,
    overlap            text        NOT NULL,
    catch_up_window_ns bigint      NOT NULL CHECK (catch_up_window_ns >= 0),
    lease_ttl_ns       bigint      NOT NULL CHECK (lease_ttl_ns >= 0),
    timeout_ns         bigint      NOT NULL CHECK (timeout_ns >= 0),
    deadline_ns        bigint      NOT NULL CHECK (deadline_ns >= 0),
    max_attempts       bigint      NOT NULL CHECK (max_attempts >= 0),
    retry_backoff_ns   bigint      NOT NULL CHECK (retry_backoff_ns >= 0),
    disabled           boolean     NOT NULL,
    version            bigint      NOT NULL CHECK (version >= 1),
    created_at         timestamptz NOT NULL,
    created_by         text        NOT NULL,
    updated_at         timestamptz NOT NULL,
    updated_by         text        NOT NULL
);
-- The kinds stored schedules name (kind_unknown).
CREATE INDEX schedules_kind_idx ON {{schema}}.schedules (kind);

-- The change log: one row per create, update and delete, written in the
-- transaction of the change, with the settings before and after it (JSON
-- of store.ScheduleSettings, the arguments in it as given; NULL before a
-- create and after a delete).
-- seq is given out by schedule_seq below, one more each change, so the
-- log has no gaps and its numbers commit in order.
CREATE TABLE {{schema}}.schedule_changes (
    seq             bigint      PRIMARY KEY CHECK (seq >= 1),
    action          text        NOT NULL CHECK (action IN ('create', 'update', 'delete')),
    name            text        COLLATE "C" NOT NULL,
    schedule_id     bigint      NOT NULL,
    version         bigint      NOT NULL CHECK (version >= 1),
    changed_by      text        NOT NULL,
    changed_at      timestamptz NOT NULL,
    settings_before json        CHECK (json_typeof(settings_before) = 'object'),
    settings_after  json        CHECK (json_typeof(settings_after) = 'object'),
    CHECK ((settings_before IS NULL) = (action = 'create') AND (settings_after IS NULL) = (action = 'delete'))
);
-- ScheduleAudit of one schedule, newest first.
CREATE INDEX schedule_changes_name_idx ON {{schema}}.schedule_changes (name, seq);

-- The last sequence number given out: one row, which every schedule write
-- locks before anything else (sql/scheduleLock.sql). Writes take turns
-- behind it, so a change's number is given out, and committed, after the
-- number before it has committed: a reader of the log never sees n + 1
-- and then n. (A sequence or an identity commits out of order: two
-- writers take n and n + 1, the second commits first.)
CREATE TABLE {{schema}}.schedule_seq (
    id  smallint PRIMARY KEY CHECK (id = 1),
    seq bigint   NOT NULL CHECK (seq >= 0)
);
INSERT INTO {{schema}}.schedule_seq (id, seq) VALUES (1, 0);

-- The handler kinds each replica runs stored schedules of (RegisterKind),
-- kept beside its jobs.
ALTER TABLE {{schema}}.replicas
    ADD COLUMN kinds jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(kinds) = 'array');
