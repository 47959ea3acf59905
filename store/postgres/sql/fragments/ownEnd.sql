-- ownEnd is the conflict clause of a holding's own end (slotFinish.sql,
-- slotFinishBatch.sql), after an INSERT INTO runs AS x. A holding has one
-- run row: a finish sent again writes nothing and returns the first. A row
-- another replica wrote for the holding as it found the run dead (reason
-- 'interrupted': runInterrupted.sql, slotAbandon.sql) stands in for the
-- end until it comes: the holding's own account, its lines included,
-- replaces it, keeping its id.
{{define "ownEnd"}}ON CONFLICT (lease_name, generation) WHERE lease_name <> '' DO UPDATE
       SET job = excluded.job, slot = excluded.slot, manual = excluded.manual, catch_up = excluded.catch_up,
           owner = excluded.owner, attempt = excluded.attempt, started_at = excluded.started_at,
           finished_at = excluded.finished_at, success = excluded.success, skipped = excluded.skipped,
           reason = excluded.reason, error = excluded.error, logs = excluded.logs
     WHERE x.reason = 'interrupted'{{end}}
