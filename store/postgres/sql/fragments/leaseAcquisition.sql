-- leaseAcquisition is the CTEs of every lease acquisition, the plain one
-- and the claim's, so that the two cannot drift apart. Its arguments (see
-- args): wanted, a SELECT of (name, ttl_us): the leases owner (a
-- parameter) asks for, with their TTLs in µs; liveKey, the parameter of
-- owner's liveness key, or 0. The
-- clock is c.now. The last CTE, lease, has a row for each lease taken,
-- with leaseColumns, at its new generation.
--
-- A lease is taken when, at the row's newest version, nobody holds it: it
-- expired, its owner's process is gone (the owner's session holds its
-- liveness lock, and the transaction-level try-lock conflicts with it), or
-- it was never taken. Never by waiting for a handler: a handler's fenced
-- transaction, which may last its whole run, holds the row FOR KEY SHARE
-- (see leaseFence.sql), and this statement never asks for a lock that
-- conflicts with that one and waits for it.
--
--   - probe locks, in name order, the rows wanted that the snapshot shows
--     as free, FOR NO KEY UPDATE: that waits for a claim, renewal or
--     release writing the row (one statement, milliseconds), never for a
--     fence, and reads the row's newest version, not the snapshot's, to
--     judge whether it is free: a lease a writer took meanwhile is held.
--     After a claim slept for its slot (c.waited), its snapshot is up to
--     store.MaxClaimWait older than its clock, so probe locks the rows the
--     snapshot shows as held too: a lease a run gave back during the wait
--     is free. (It read only the rows the snapshot showed as free, and a
--     run that ended during the wait made the next slot an overlap.
--     Otherwise a held row is left unlocked, so that its run's end and its
--     renewals never wait for this statement. And before all that, probe
--     skipped rows being written and the upsert waited for the writer and
--     then locked the row FOR UPDATE, behind the fence the writer's
--     handler had taken meanwhile: finding 14 of docs/reliability.md.)
--     The caller's c has now and waited (false for an acquisition that
--     does not wait).
--   - taken locks those rows again FOR UPDATE SKIP LOCKED: the one mode
--     that conflicts with a fence, so it passes over a row that a fenced
--     transaction holds. Such a lease is busy: expired, but its deposed
--     writer, frozen or cut off, is still inside a transaction fenced under
--     it. Its takeover is turned down at once (the claim answers
--     lease_busy) instead of waiting for that transaction as long as it
--     lasts.
--   - taken_over moves each row taken to owner at the next generation.
--     This transaction holds the row FOR UPDATE until it commits, so a
--     fence of the old generation waits for the commit and then fails.
--   - created inserts the leases the snapshot did not have. ON CONFLICT DO
--     NOTHING: when a concurrent acquisition inserted the row first, this
--     one waits for that statement's commit and takes no lock on the row
--     (DO UPDATE would, behind a fence), so the lease reads as held.
--
-- Every generation a lease takes is at least epoch's floor (see
-- generationFloor), so a token is never issued twice across a failover.
--
-- Rows are locked in name order, lease rows before slot rows (see
-- slotClaim.sql), so two statements cannot deadlock.
wanted AS ({{.wanted}}),
epoch AS (
    SELECT {{template "generationFloor"}} AS floor
),
probe AS (
    -- free is computed on the row as locked: its newest version.
    SELECT x.name, NOT {{template "leaseHeld" args "alias" "x" "owner" .owner}} AS free
      FROM {{schema}}.leases x
     CROSS JOIN c
     WHERE x.name IN (SELECT name FROM wanted)
       AND (c.waited OR NOT {{template "leaseHeld" args "alias" "x" "owner" .owner}})
     ORDER BY x.name
       FOR NO KEY UPDATE OF x
),
taken AS (
    SELECT x.name FROM {{schema}}.leases x WHERE x.name IN (SELECT name FROM probe WHERE free)
       FOR UPDATE OF x SKIP LOCKED
),
busy AS (
    SELECT name FROM probe WHERE free EXCEPT SELECT name FROM taken
),
taken_over AS (
    UPDATE {{schema}}.leases AS t
       SET owner       = {{.owner}},
           generation  = greatest(t.generation + 1, (SELECT floor FROM epoch)),
           acquired_at = c.now,
           renewed_at  = c.now,
           expires_at  = c.now + w.ttl_us * interval '1 microsecond',
           live_key    = nullif({{.liveKey}}::bigint, 0)
      FROM wanted w
      JOIN taken k ON k.name = w.name
     CROSS JOIN c
     -- Free, as probe judged it on the newest version: this statement has
     -- held the row's lock since. (Judged here again, it would be judged
     -- on the snapshot's version, which a run that ended since holds.)
     WHERE t.name = w.name
    RETURNING t.name, t.owner, t.generation, t.acquired_at, t.renewed_at, t.expires_at
),
created AS (
    INSERT INTO {{schema}}.leases AS t (name, owner, generation, acquired_at, renewed_at, expires_at, live_key)
    SELECT w.name, {{.owner}}, greatest(1, (SELECT floor FROM epoch)), c.now, c.now, c.now + w.ttl_us * interval '1 microsecond', nullif({{.liveKey}}::bigint, 0)
      FROM wanted w
     CROSS JOIN c
     WHERE NOT EXISTS (SELECT 1 FROM {{schema}}.leases x WHERE x.name = w.name)
       -- probe and taken lock first (an InitPlan, run before the first row).
       AND (SELECT count(*) FROM taken) >= 0
     ORDER BY w.name
    ON CONFLICT (name) DO NOTHING
    RETURNING t.name, t.owner, t.generation, t.acquired_at, t.renewed_at, t.expires_at
),
lease AS (
    SELECT * FROM taken_over UNION ALL SELECT * FROM created
)
