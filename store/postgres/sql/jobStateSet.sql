-- jobStateSet.sql: $1 job, $2 enabled override or NULL, $3 by, $4 note,
-- $5 pinned now or NULL, $6 the override's end or NULL.
--
-- lock_job_state takes the job's pause lock before the write and keeps it
-- to the commit: a claim waiting in its statement for a slot either took
-- the lock first, and this waits for it to commit, or reads this write
-- once it commits (migration 007).
WITH locked AS (SELECT {{schema}}.lock_job_state($1))
INSERT INTO {{schema}}.job_state AS j (job, enabled_override, override_by, override_at, note, override_until)
SELECT $1::text, $2::boolean, $3::text, coalesce($5::timestamptz, now()), $4::text, $6::timestamptz
  FROM locked
ON CONFLICT (job) DO UPDATE
   SET enabled_override = EXCLUDED.enabled_override,
       override_by      = EXCLUDED.override_by,
       override_at      = EXCLUDED.override_at,
       note             = EXCLUDED.note,
       override_until   = EXCLUDED.override_until
RETURNING job, enabled_override, override_by, override_at, note, override_until
