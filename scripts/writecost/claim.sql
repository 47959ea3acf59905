-- The rows a claim of 1,000 fresh slots writes, and nothing else: each
-- job's lease taken (one update) and its slot inserted running. One
-- transaction, as the claim's statement is. The leases expire as they
-- are taken (the same write as a minute's lease), so that each round finds
-- them free without a finish.
SELECT nextval('writecost_slot') AS s \gset
BEGIN;
UPDATE cronfence.leases
   SET generation = generation + 1, owner = 'r', acquired_at = now(), renewed_at = now(), expires_at = now()
 WHERE name IN (SELECT 'job:job-' || g FROM generate_series(1, 1000) g);
INSERT INTO cronfence.slots (job, slot, status, owner, lease_name, generation, attempts, started_at)
SELECT 'job-' || g, timestamptz '2026-01-01' + :s * interval '1 second', 'running', 'r', 'job:job-' || g, :s, 1, now()
  FROM generate_series(1, 1000) g;
COMMIT;
