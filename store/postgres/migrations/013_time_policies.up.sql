-- A stored schedule's time policies: its catch-up policy
-- (store.ScheduleSettings.CatchUp: empty for the default, none, latest or
-- all) and, with all, how many of its slots back catch-up looks
-- (MaxCatchUp; 0 for the default), and its jitter (the bound of each
-- slot's start delay, in nanoseconds; 0 for none). And a pause that ends
-- by itself: job_state.override_until (NULL: until changed), which the
-- claims read through job_overrides_until, as job_overrides (migration
-- 008) with the column; job_overrides stays for the binaries before.
ALTER TABLE {{schema}}.schedules
    ADD COLUMN catch_up     text    NOT NULL DEFAULT '' CHECK (catch_up IN ('', 'none', 'latest', 'all')),
    ADD COLUMN max_catch_up integer NOT NULL DEFAULT 0 CHECK (max_catch_up >= 0),
    ADD COLUMN jitter_ns    bigint  NOT NULL DEFAULT 0 CHECK (jitter_ns >= 0);

ALTER TABLE {{schema}}.job_state ADD COLUMN override_until timestamptz;

CREATE OR REPLACE FUNCTION {{schema}}.job_overrides_until(jobs text[])
RETURNS TABLE (job text, enabled_override boolean, override_until timestamptz)
LANGUAGE plpgsql VOLATILE ROWS 10
AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(hashtext('cronfence.pause:{{schema}}'), b.bucket)
       FROM (SELECT DISTINCT {{schema}}.job_state_bucket(j) AS bucket FROM unnest(jobs) AS j) b;
    RETURN QUERY SELECT s.job, s.enabled_override, s.override_until FROM {{schema}}.job_state s WHERE s.job = ANY (jobs);
END;
$$;
