-- An experiment, not cronfence's statement: the least a claim of 1,000
-- fresh slots could be as one statement (each job's lease taken where it
-- is free, its slot inserted where it has no row, the winners returned),
-- without the real claim's other cases (waits, pauses, overlaps,
-- takeovers, retries, notices). Against claim.sql (the same rows, plain
-- statements) it says what one statement's joins cost; against
-- BenchmarkStore/SlotClaimBatch, what the real claim's other parts do.
-- The leases expire as they are taken, as in claim.sql.
SELECT nextval('writecost_slot') AS s \gset
WITH i AS (
    SELECT 'job-' || g AS job, 'job:job-' || g AS lease_name, timestamptz '2026-01-01' + :s * interval '1 second' AS slot
      FROM generate_series(1, 1000) g
),
lease AS (
    UPDATE cronfence.leases t
       SET generation = t.generation + 1, owner = 'r', acquired_at = now(), renewed_at = now(),
           expires_at = now()
      FROM i
     WHERE t.name = i.lease_name AND t.expires_at <= now()
    RETURNING i.job, i.slot, t.name, t.generation
),
claim AS (
    INSERT INTO cronfence.slots AS s (job, slot, status, owner, lease_name, generation, attempts, started_at)
    SELECT job, slot, 'running', 'r', name, generation, 1, now() FROM lease
    ON CONFLICT (job, slot) DO NOTHING
    RETURNING s.job, s.generation
)
SELECT count(*) FROM claim;
