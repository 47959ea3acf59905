-- runGet.sql: the run row of one holding, through runs_holding_idx (the
-- partial index covers only rows with a lease name, so the query says so
-- too). $1 lease name, $2 generation.
SELECT {{template "runColumns"}} FROM {{schema}}.runs
 WHERE lease_name = $1 AND generation = $2 AND lease_name <> ''
