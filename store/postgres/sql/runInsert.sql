-- runInsert.sql writes a run row; for a holding that has one already (a
-- retry after a lost answer) it writes nothing and returns that row.
--
-- $1 job, $2 slot or NULL, $3 manual, $4 catch-up, $5 owner,
-- $6 generation, $7 attempt, $8 started_at or NULL, $9 finished_at or NULL,
-- $10 success, $11 skipped, $12 reason, $13 error, $14 logs, $15 pinned now
-- or NULL, $16 lease name or ”.
WITH c AS (SELECT coalesce($15::timestamptz, now()) AS now),
r AS (
    INSERT INTO {{schema}}.runs (job, slot, manual, catch_up, owner, generation, lease_name, attempt,
                                 started_at, finished_at, success, skipped, reason, error, logs)
    SELECT $1, $2, $3, $4, $5, $6, $16, $7, coalesce($8::timestamptz, c.now),
           coalesce($9::timestamptz, $8::timestamptz, c.now), $10, $11, $12, $13, $14
      FROM c
    ON CONFLICT (lease_name, generation) WHERE lease_name <> '' DO NOTHING
    RETURNING {{template "runColumns"}}
)
SELECT * FROM r
UNION ALL
SELECT {{template "runColumns"}} FROM {{schema}}.runs
 WHERE $16 <> '' AND lease_name = $16 AND generation = $6 AND NOT EXISTS (SELECT 1 FROM r)
