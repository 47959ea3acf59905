-- replicaHeartbeat.sql keeps started_at from the first heartbeat and
-- replaces everything else. A replica with timers tells the listeners it
-- is alive (a), so they count it among the replicas a slot may prefer.
--
-- $1 owner, $2 host, $3 pid, $4 version, $5 clock offset in ns, $6 timers,
-- $7 jobs as JSON text, $8 pinned now or NULL, $9 kinds as JSON text.
WITH up AS (
    INSERT INTO {{schema}}.replicas AS r (owner, host, pid, version, started_at, heartbeat_at, clock_offset_ns, timers, jobs, kinds)
    SELECT $1, $2, $3, $4, c.now, c.now, $5, $6, $7::text::jsonb, $9::text::jsonb
      FROM (SELECT coalesce($8::timestamptz, now()) AS now) c
    ON CONFLICT (owner) DO UPDATE
       SET host            = EXCLUDED.host,
           pid             = EXCLUDED.pid,
           version         = EXCLUDED.version,
           heartbeat_at    = EXCLUDED.heartbeat_at,
           clock_offset_ns = EXCLUDED.clock_offset_ns,
           timers          = EXCLUDED.timers,
           jobs            = EXCLUDED.jobs,
           kinds           = EXCLUDED.kinds
    RETURNING {{template "replicaColumns"}}
),
notice AS MATERIALIZED (
    {{template "notice" args "rows" "SELECT 1 AS ord, 'a' AS kind, '' AS job, 'epoch'::timestamptz AS slot, up.owner FROM up WHERE up.timers"}}
)
SELECT up.* FROM up CROSS JOIN (SELECT count(*) FROM notice) told
