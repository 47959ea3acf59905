-- Backfills (store.Backfills): requests to run the slots of a range that
-- never ran, and their progress, kept so that any replica can drive one
-- and another take over where it stopped.
--
-- One row per backfill. id comes from an identity, never used twice. The
-- range is [range_from, range_to). cursor_slot is the last slot handled
-- (NULL before the first); counts the slots handled by what happened to
-- them (store.BackfillCounts as a JSON object). finished_at is set when
-- the backfill is done or cancelled, and only then. driver, created_by and
-- cancelled_by are names, empty when none.
CREATE TABLE {{schema}}.backfills (
    id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job            text        COLLATE "C" NOT NULL,
    range_from     timestamptz NOT NULL,
    range_to       timestamptz NOT NULL,
    include_failed boolean     NOT NULL,
    rate           integer     NOT NULL CHECK (rate >= 0),
    total          integer     NOT NULL CHECK (total >= 0),
    state          text        NOT NULL CHECK (state IN ('running', 'done', 'cancelled')),
    cursor_slot    timestamptz,
    counts         jsonb       NOT NULL CHECK (jsonb_typeof(counts) = 'object'),
    driver         text        NOT NULL,
    created_by     text        NOT NULL,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    finished_at    timestamptz,
    cancelled_by   text        NOT NULL,
    CHECK (range_to > range_from),
    CHECK ((finished_at IS NULL) = (state = 'running'))
);
-- One running backfill a job: of two created at once, the second's insert
-- meets the first's row here and writes nothing (sql/backfillCreate.sql).
CREATE UNIQUE INDEX backfills_running_idx ON {{schema}}.backfills (job) WHERE state = 'running';
-- BackfillList of one job, newest first.
CREATE INDEX backfills_job_idx ON {{schema}}.backfills (job, id);
