-- jobStateSet.sql: $1 job, $2 enabled override or NULL, $3 by, $4 note,
-- $5 pinned now or NULL.
INSERT INTO {{schema}}.job_state AS j (job, enabled_override, override_by, override_at, note)
VALUES ($1, $2, $3, coalesce($5::timestamptz, now()), $4)
ON CONFLICT (job) DO UPDATE
   SET enabled_override = EXCLUDED.enabled_override,
       override_by      = EXCLUDED.override_by,
       override_at      = EXCLUDED.override_at,
       note             = EXCLUDED.note
RETURNING job, enabled_override, override_by, override_at, note
