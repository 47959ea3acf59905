-- replicaBeat.sql is replicaHeartbeat.sql for a replica whose jobs are
-- unchanged since its last recorded heartbeat: it updates every other
-- field, keeps the stored jobs and kinds and returns the row without the
-- jobs (an empty list in their place), so thousands of jobs are neither
-- sent nor read back; the kinds, few, are read back. With no row of the
-- owner it writes nothing and returns no row.
--
-- $1 owner, $2 host, $3 pid, $4 version, $5 clock offset in ns, $6 timers,
-- $7 pinned now or NULL.
WITH up AS (
    UPDATE {{schema}}.replicas AS r
       SET host            = $2,
           pid             = $3,
           version         = $4,
           heartbeat_at    = c.now,
           clock_offset_ns = $5,
           timers          = $6
      FROM (SELECT coalesce($7::timestamptz, now()) AS now) c
     WHERE r.owner = $1
    RETURNING {{template "replicaColumnsBeforeJobs"}}, '[]'::text AS jobs, kinds::text
),
notice AS MATERIALIZED (
    {{template "notice" args "rows" "SELECT 1 AS ord, 'a' AS kind, '' AS job, 'epoch'::timestamptz AS slot, up.owner FROM up WHERE up.timers"}}
)
SELECT up.* FROM up CROSS JOIN (SELECT count(*) FROM notice) told
