-- backfillCreate.sql writes a new backfill, running, with no progress, and
-- returns it. When a backfill of the job runs (the partial unique index
-- backfills_running_idx) it writes nothing and returns no row; one being
-- created at the same time is waited for. The caller then reads the
-- running one (backfillRunning.sql): this statement's snapshot, taken
-- before it waited, may not show it.
--
-- A backfill written is told (b) to every replica's listener: the one
-- that registers the job takes it up at once, where without notices it
-- looks every backfillPollEvery.
--
-- $1 job, $2 from, $3 to, $4 include failed, $5 rate, $6 total, $7 counts
-- (JSON text), $8 by, $9 pinned now or NULL.
WITH b AS (
    INSERT INTO {{schema}}.backfills (job, range_from, range_to, include_failed, rate, total, state, cursor_slot, counts, driver,
                                      created_by, created_at, updated_at, finished_at, cancelled_by)
    SELECT $1, $2, $3, $4, $5, $6, 'running', NULL, $7::text::jsonb, '', $8, c.now, c.now, NULL, ''
      FROM (SELECT coalesce($9::timestamptz, clock_timestamp()) AS now) c
    ON CONFLICT (job) WHERE state = 'running' DO NOTHING
    RETURNING {{template "backfillColumns"}}
),
notice AS MATERIALIZED (
    {{template "notice" args "rows" "SELECT 1 AS ord, 'b' AS kind, b.job, 'epoch'::timestamptz AS slot, '' AS owner FROM b"}}
)
SELECT b.* FROM b CROSS JOIN (SELECT count(*) FROM notice) told
