-- pruneStep.sql is one step of Prune: it deletes at most $2 slots and $2
-- runs older than the cutoff, reading little more than what it deletes,
-- however much newer history the tables keep. The steps before it left
-- cursors: slots are walked job by job in key order (a job's slots older
-- than the cutoff are the start of its primary key range, and the next job
-- is found by one probe of that key: slots have no index by time alone),
-- runs in order of their start (runs_started_at_idx). A NULL cursor is a
-- table done with.
--
-- Each job keeps its latest claim whatever its age: it is the record that
-- the slot already ran, so a monthly job with a month-long catch-up
-- window is not run again by a deploy on the 10th. Likewise each job's
-- latest run stays for "last run" displays. Resolved alerts go by the time
-- they were resolved (an open alert stays, however old), and replicas by
-- their last heartbeat: a replica that stopped heartbeating that long ago
-- crashed without removing its row. Those two are not counted (few rows;
-- after the first step there is nothing left of them to find).
--
-- The rows are deleted by their ctid, so the plan (generic, on a pool
-- TunePool set up) cannot turn the delete into a scan of the table.
-- Returns what the step deleted of each table and where the next step
-- starts: the last job it deleted slots of (which may have more), the
-- latest start of a run it deleted.
--
-- $1 cutoff, $2 batch, $3 slots' cursor (a job name), $4 runs' cursor.
WITH RECURSIVE jobs AS (
    (SELECT s.job FROM {{schema}}.slots s WHERE s.job >= $3::text ORDER BY s.job LIMIT 1)
    UNION ALL
    SELECT (SELECT s.job FROM {{schema}}.slots s WHERE s.job > jobs.job ORDER BY s.job LIMIT 1)
      FROM jobs
     WHERE jobs.job IS NOT NULL
),
old_slots AS (
    SELECT o.ctid
      FROM jobs
     CROSS JOIN LATERAL (
            SELECT s.ctid
              FROM {{schema}}.slots s
             WHERE s.job = jobs.job
               AND s.slot < $1
               AND s.slot < (SELECT max(m.slot) FROM {{schema}}.slots m WHERE m.job = jobs.job)
             ORDER BY s.slot
             LIMIT $2
           ) o
     WHERE jobs.job IS NOT NULL
     LIMIT $2
),
ds AS (
    DELETE FROM {{schema}}.slots s
     WHERE s.ctid = ANY (ARRAY(SELECT ctid FROM old_slots))
    RETURNING s.job
),
old_runs AS (
    SELECT r.ctid
      FROM {{schema}}.runs r
     WHERE r.started_at >= $4::timestamptz
       AND r.started_at < $1
       AND r.id < (SELECT max(m.id) FROM {{schema}}.runs m WHERE m.job = r.job)
     ORDER BY r.started_at
     LIMIT $2
),
dr AS (
    DELETE FROM {{schema}}.runs r
     WHERE r.ctid = ANY (ARRAY(SELECT ctid FROM old_runs))
    RETURNING r.started_at
),
da AS (
    DELETE FROM {{schema}}.alerts WHERE resolved_at < $1
),
dp AS (
    DELETE FROM {{schema}}.replicas WHERE heartbeat_at < $1
)
SELECT (SELECT count(*) FROM ds), (SELECT max(job) FROM ds),
       (SELECT count(*) FROM dr), (SELECT max(started_at) FROM dr)
