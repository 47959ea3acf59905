-- jobRegister.sql records each job's first registration, once: a job that
-- has slots from before the jobs table existed (an upgraded database) was
-- first seen at its earliest slot, any other now. It returns every job's
-- first registration in the order given.
--
-- $1 jobs, $2 pinned now or NULL.
WITH c AS (SELECT coalesce($2::timestamptz, now()) AS now),
i AS (SELECT * FROM unnest($1::text[]) WITH ORDINALITY AS i(job, ord)),
ins AS (
    INSERT INTO {{schema}}.jobs (job, first_seen_at)
    SELECT i.job, least(c.now, (SELECT min(s.slot) FROM {{schema}}.slots s WHERE s.job = i.job))
      FROM i CROSS JOIN c
     ORDER BY i.job COLLATE "C"
    ON CONFLICT (job) DO NOTHING
    RETURNING job, first_seen_at
)
SELECT i.job, coalesce(ins.first_seen_at, j.first_seen_at)
  FROM i
  LEFT JOIN ins ON ins.job = i.job
  LEFT JOIN {{schema}}.jobs j ON j.job = i.job
 ORDER BY i.ord
