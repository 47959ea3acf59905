-- runList.sql: every job's runs, newest start first (store.Store.RunList),
-- through runs_started_at_idx. $1 and $2 the cursor: only rows before
-- (started_at, id) in that order ('infinity' and any id for the newest),
-- $3 limit. One statement a shape, without optional filters ("$1 = '' OR
-- job = $1"): a generic plan (postgres.TunePool) of one would scan the
-- whole table backwards for a job that rarely runs.
SELECT {{template "runColumns"}} FROM {{schema}}.runs
 WHERE (started_at, id) < ($1, $2)
 ORDER BY started_at DESC, id DESC
 LIMIT $3
