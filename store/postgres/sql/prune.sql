-- prune.sql keeps each job's latest claim whatever its age: it is the record
-- that the slot already ran, so a monthly job with a month-long catch-up
-- window is not run again by a deploy on the 10th. Likewise each job's
-- latest run stays for "last run" displays. Resolved alerts go by the time
-- they were resolved (an open alert stays, however old), and replicas by
-- their last heartbeat: a replica that stopped heartbeating that long ago
-- crashed without removing its row. Those two are not counted.
--
-- $1 cutoff.
WITH ds AS (
    DELETE FROM {{schema}}.slots s
     WHERE s.slot < $1
       AND s.slot < (SELECT max(m.slot) FROM {{schema}}.slots m WHERE m.job = s.job)
    RETURNING 1
),
dr AS (
    DELETE FROM {{schema}}.runs r
     WHERE r.started_at < $1
       AND r.id < (SELECT max(m.id) FROM {{schema}}.runs m WHERE m.job = r.job)
    RETURNING 1
),
da AS (
    DELETE FROM {{schema}}.alerts WHERE resolved_at < $1
),
dp AS (
    DELETE FROM {{schema}}.replicas WHERE heartbeat_at < $1
)
SELECT (SELECT count(*) FROM ds), (SELECT count(*) FROM dr)
