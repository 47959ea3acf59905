-- Version 8: a stored schedule's catch-up policy (store.ScheduleSettings.
-- CatchUp: empty for the default, none, latest or all) and, with all, how
-- many of its slots back catch-up looks (MaxCatchUp; 0 for the default).
-- As 013_catch_up on PostgreSQL.
ALTER TABLE cronfence_schedules ADD COLUMN catch_up TEXT NOT NULL DEFAULT ''
    CHECK (catch_up IN ('', 'none', 'latest', 'all'));
ALTER TABLE cronfence_schedules ADD COLUMN max_catch_up INTEGER NOT NULL DEFAULT 0
    CHECK (max_catch_up >= 0);
