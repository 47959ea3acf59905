-- Version 8: a stored schedule's time policies: its catch-up policy
-- (store.ScheduleSettings.CatchUp: empty for the default, none, latest or
-- all) and, with all, how many of its slots back catch-up looks
-- (MaxCatchUp; 0 for the default), and its jitter (the bound of each
-- slot's start delay, in nanoseconds; 0 for none). And a pause that ends
-- by itself: cronfence_job_state.override_until (microseconds since the
-- epoch; NULL: until changed). As 013_time_policies on PostgreSQL.
ALTER TABLE cronfence_schedules ADD COLUMN catch_up TEXT NOT NULL DEFAULT ''
    CHECK (catch_up IN ('', 'none', 'latest', 'all'));
ALTER TABLE cronfence_schedules ADD COLUMN max_catch_up INTEGER NOT NULL DEFAULT 0
    CHECK (max_catch_up >= 0);
ALTER TABLE cronfence_schedules ADD COLUMN jitter_ns INTEGER NOT NULL DEFAULT 0
    CHECK (jitter_ns >= 0);
ALTER TABLE cronfence_job_state ADD COLUMN override_until INTEGER;
