-- The rows the finish of claim.sql's 1,000 runs writes, and nothing else,
-- in one transaction as the finish's statement is: each lease released,
-- each slot marked completed, each run's row inserted. writecost.sh runs
-- it after claim.sql, in the same script, for the slot that one claimed.
BEGIN;
UPDATE cronfence.leases SET expires_at = now()
 WHERE name IN (SELECT 'job:job-' || g FROM generate_series(1, 1000) g);
UPDATE cronfence.slots SET status = 'completed', finished_at = now()
 WHERE job IN (SELECT 'job-' || g FROM generate_series(1, 1000) g)
   AND slot = timestamptz '2026-01-01' + :s * interval '1 second';
INSERT INTO cronfence.runs (job, slot, owner, generation, lease_name, attempt, started_at, finished_at, success)
SELECT 'job-' || g, timestamptz '2026-01-01' + :s * interval '1 second', 'r', :s, 'job:job-' || g, 1, now(), now(), true
  FROM generate_series(1, 1000) g;
COMMIT;
