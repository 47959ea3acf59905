-- backfillRunning.sql: the ID of the running backfill of job $1, if any.
SELECT id FROM {{schema}}.backfills WHERE job = $1 AND state = 'running'
