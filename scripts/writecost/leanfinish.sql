-- An experiment, not cronfence's statement: the least the finish of
-- leanclaim.sql's 1,000 runs could be as one statement (each lease
-- released, each slot completed, each run's row inserted once per
-- holding). writecost.sh runs it after leanclaim.sql, for that slot.
WITH i AS (
    SELECT 'job-' || g AS job, 'job:job-' || g AS lease_name, timestamptz '2026-01-01' + :s * interval '1 second' AS slot
      FROM generate_series(1, 1000) g
),
l AS (
    UPDATE cronfence.leases t SET expires_at = least(t.expires_at, now())
      FROM i
     WHERE t.name = i.lease_name AND t.owner = 'r'
    RETURNING i.job, t.generation
),
s AS (
    UPDATE cronfence.slots t SET status = 'completed', finished_at = now()
      FROM i
     WHERE t.job = i.job AND t.slot = i.slot AND t.status IN ('running', 'completed')
    RETURNING t.job, t.slot, t.lease_name, t.generation, t.started_at
),
r AS (
    INSERT INTO cronfence.runs (job, slot, owner, generation, lease_name, attempt, started_at, finished_at, success)
    SELECT s.job, s.slot, 'r', s.generation, s.lease_name, 1, s.started_at, now(), true FROM s
    ON CONFLICT (lease_name, generation) WHERE lease_name <> '' DO NOTHING
    RETURNING id
)
SELECT (SELECT count(*) FROM l), (SELECT count(*) FROM r);
