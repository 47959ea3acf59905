-- slotListInterrupted.sql finds running slots whose run is dead, and
-- failed slots still open to a retry. The partial indexes on running slots
-- and on failed ones open to a retry keep it cheap: a handful of rows,
-- whatever the history. The liveness try-lock is released when the
-- statement's transaction ends.
--
-- $1 pinned now or NULL.
SELECT * FROM (
    SELECT s.job, s.slot, s.status, s.owner, s.lease_name, s.generation, s.attempts, s.started_at, s.finished_at
      FROM {{schema}}.slots s
      LEFT JOIN {{schema}}.leases l ON l.name = s.lease_name
     WHERE s.status = 'running'
       AND (l.name IS NULL
            OR l.generation <> s.generation
            OR l.expires_at <= coalesce($1::timestamptz, now())
            OR (l.live_key IS NOT NULL AND pg_try_advisory_xact_lock(l.live_key)))
    UNION ALL
    SELECT s.job, s.slot, s.status, s.owner, s.lease_name, s.generation, s.attempts, s.started_at, s.finished_at
      FROM {{schema}}.slots s
     WHERE s.status = 'failed' AND s.retry_until IS NOT NULL AND s.retry_until > coalesce($1::timestamptz, now())
) found
 ORDER BY slot
