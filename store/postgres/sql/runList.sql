-- runList.sql: every job's runs. $1 before id (math.MaxInt64 for the
-- newest), $2 limit. One statement a shape, without optional filters
-- ("$1 = '' OR job = $1"): a generic plan (postgres.TunePool) of one
-- would scan the whole table backwards for a job that rarely runs.
SELECT {{template "runColumns"}} FROM {{schema}}.runs
 WHERE id < $1
 ORDER BY id DESC
 LIMIT $2
