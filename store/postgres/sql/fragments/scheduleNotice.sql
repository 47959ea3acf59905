-- scheduleNotice publishes the change a schedule write logged (the CTE
-- log: seq, name) on the store's notice channel, sent when the write
-- commits: a line ["d", name, seq, ""] (see notice.go), read as a
-- store.NoticeSchedule. The CTE notice it defines must be read for it to
-- run.
notice AS MATERIALIZED (
    SELECT pg_notify({{channel}}, json_build_array('d', log.name, log.seq, '')::text) FROM log
)
