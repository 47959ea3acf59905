-- A stored schedule's time policies: its catch-up policy
-- (store.ScheduleSettings.CatchUp: empty for the default, none, latest or
-- all) and, with all, how many of its slots back catch-up looks
-- (MaxCatchUp; 0 for the default), and its jitter (the bound of each
-- slot's start delay, in nanoseconds; 0 for none).
ALTER TABLE {{schema}}.schedules
    ADD COLUMN catch_up     text    NOT NULL DEFAULT '' CHECK (catch_up IN ('', 'none', 'latest', 'all')),
    ADD COLUMN max_catch_up integer NOT NULL DEFAULT 0 CHECK (max_catch_up >= 0),
    ADD COLUMN jitter_ns    bigint  NOT NULL DEFAULT 0 CHECK (jitter_ns >= 0);
