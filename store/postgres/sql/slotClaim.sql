-- slotClaim.sql claims a batch of (job, slot)s, each with its guarding
-- lease, in one statement:
--
--   - i unpacks the items; found is each slot's row as of the statement's
--     snapshot (read before c, which needs to know whether there is one),
--     and prev adds whether the lease that guards it is still live. Each
--     row is looked up by its key (LIMIT 1 keeps the subquery a lookup the
--     planner cannot turn into a join): a plan made for a large batch read
--     the whole slots table, which grows with the history, to hash it. So
--     is the job's pause override, in gate.
--   - overrides are the jobs' pause overrides. A statement sent ahead of
--     its slot reads them after c (so after its wait, in the after mode)
--     through job_overrides (migration 007): it takes the jobs' pause
--     locks and reads with a snapshot of its own, so a pause committed
--     before is seen, and one not yet committed waits for this
--     statement's commit, and then, in the ahead mode, for the slot
--     (migration 009). A pause acknowledged before the slot thus stops
--     it. Any other reads them by key from its snapshot.
--   - gate refuses from the snapshot: a slot not yet due by the database
--     clock, a paused job (override, else the declared value), a completed
--     or skipped slot, one still running under a live lease, a failed one
--     the claim does not retry, or one out of attempts. A refused item touches nothing, except that a paused one
--     is settled (see settle).
--   - wanted, probe, taken, busy, taken_over, created and lease are the
--     acquisition of the items' leases (see fragments/leaseAcquisition.sql), the point
--     where contenders serialise; only its winners go on. A lease whose
--     owner's liveness lock is free (its process is gone) is taken over at
--     once. It waits for no handler's fenced transaction: a lease whose
--     deposed writer is still inside one (expired, or dead, by the
--     snapshot, and fenced) is busy, and its item is refused lease_busy
--     and writes nothing (waiting for that transaction, which lasts as
--     long as its writer is frozen or cut off, held up every item of the
--     batch, every job due at that instant); a lease that a concurrent
--     claim took reads as held, and its item goes on to mark.
--   - claim inserts the slot, or takes over a failed, buffered or
--     interrupted one; its WHERE is re-checked on the newest row version
--     (attempts must be what the gate saw), so a concurrent completion is
--     never overwritten.
--   - mark records an overlap (gate passed, lease held by another run) as
--     skipped or buffered, and skip writes the skip run row naming the
--     holder. ON CONFLICT DO NOTHING makes exactly one replica record it.
--     A late claim is buffered, not skipped, whatever the policy: by the
--     statement's snapshot no holder that took the lease at or before the
--     slot's instant holds it, so the lease was free when the slot came
--     due and the holder (a catch-up or resumed run of an earlier slot,
--     usually) started after it. That includes a holder that took the
--     lease concurrently, after the snapshot, which is later still. The
--     slot runs when the holder's run ends (see SlotFinish's buffered).
--     A claim whose policy is wait records nothing: its caller claims the
--     slot again once the holder is done.
--   - settle records a due slot of a paused job that has no row yet as
--     skipped, and settled writes its skip run row, reason paused, as skip
--     does an overlap's: the slot's history says why nothing ran (the
--     dashboard draws it paused, logs lists it). The slot is then final: a
--     replica whose claim arrives after the resume (its clock runs behind,
--     a not_due retry, a catch-up) finds it skipped instead of running it.
--     An existing row is never touched, and ON CONFLICT DO NOTHING makes
--     concurrent refusals write one slot row, and so one run row. The
--     refusal stays paused; a later claim of the slot is refused skipped.
--     settle is the one slot write not preceded by its lease's row lock (a
--     paused item takes no lease). Two batches could then lock two slots
--     in opposite orders only if each saw a different job of the two
--     paused (pause and resume committed between their snapshots, at the
--     same slot instant); Postgre.sql would detect that deadlock and fail
--     one statement, which the scheduler handles as an unreachable store.
--   - notice tells every replica's listener which items this statement
--     answered for good: c for a run it started, s for one it recorded
--     (skipped, buffered) or refused for a reason a retry would not
--     change (paused, completed, skipped, running, out of attempts).
--     not_due and lease_busy items are tried again and not told. It reads
--     answer, which joined every part already (joining them again cost
--     it as much as its lines).
--
--   - c is the statement's clock: now(), or, when items ask to wait for
--     their slots (store.SlotClaimParams.WaitDue), the instant the latest
--     of them that is due within $15 µs comes (until). Every item is
--     judged and dated by c, and nothing starts before c by the database
--     clock. The wait for it is one of two:
--       - ahead: when no item has a slot row yet and none of their leases
--         is held at the statement's start (t0; by its snapshot), the
--         common case of a timer's claim, c is until (or t0, if later),
--         everything is judged and written at once, and the statement
--         does not wait at all: it commits before the slot, and the
--         caller waits, on its own monotonic clock, what is left to the
--         slot by the database clock read last (fin; or, sent through
--         claim_committed, migration 009, read after the commit), so
--         that the commit, whose WAL flush was half of a slot's start on
--         two cores, and the answer's way back are behind the slot when
--         it comes (store.SlotClaimResult.Wait). Judging at t0 for
--         until is sound because nothing the judgement reads can change
--         in between: a lease free at t0 stays free (only an acquisition
--         takes it, and this one holds it from its commit; an expired
--         lease cannot be renewed), the slots this writes are its own (a
--         claim of the same slot waits for this one's commit, and then
--         finds it claimed), and a pause or resume acknowledged before
--         the slot cannot come between: one that takes the job's pause
--         lock after this claim has waits, still holding it, until this
--         slot is due (lock_job_state, migration 009), so it is
--         acknowledged after the slot.
--       - after: otherwise, a lease held at t0 might be released before
--         the slot (a run ending), and judging it then would record an
--         overlap that never was; so the statement waits first
--         (spinUntil: pg_sleep, then the clock read in a loop for the
--         last 1.5 ms), reads the
--         clock then (not now(): a statement that started before the slot
--         may reach c after it) and takes every lock after it.
--     The snapshot is the statement's, taken before c; the
--     lease and slot writes re-check the newest row versions, as they do
--     after any wait for a row lock. (So mark's rule below reads a holder
--     that took the lease during the wait, up to the scheduler's lead of
--     50 ms before the slot, as late: its slot is buffered, not skipped,
--     and runs when that holder's run ends.)
--   - answer is the statement's answer, one row per item, with (fin) the
--     instant c when ahead, the runs' start, and the database clock read
--     last: the caller waits the difference (store.SlotClaimResult.Wait).
--     Materialized, and it and notice counted before fin, so every part
--     (the claims, the leases, the overlaps, the notices) is written
--     before the clock is read.
--
-- With the argument json, the answer is one row: its rows as a JSON array,
-- in the items' order (for claim_committed, migration 009).
--
-- $1 jobs, $2 slots, $3 lease names, $4 declared disabled, $5 overlap
-- policies, $6 max attempts, $7 TTLs in µs, $8 catch-up flags, $9 owner,
-- $10 pinned now or NULL, $11 live key or 0, $12 retry-failed flags, $13
-- the attempts each retries (0: any), $14 wait-due flags, $15 the longest
-- wait in µs (store.MaxClaimWait). Its argument declared (see
-- slotClaimDeclared.sql) leaves the pause overrides out.
WITH i AS (
    SELECT *
      FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::boolean[], $5::text[],
                  $6::integer[], $7::bigint[], $8::boolean[], $12::boolean[], $13::integer[], $14::boolean[])
           WITH ORDINALITY AS i(job, slot, lease_name, disabled, overlap, max_attempts, ttl_us, catch_up, retry_failed,
                                retry_of, wait_due, ord)
),
found AS (
    SELECT i.ord, s.*
      FROM i
     CROSS JOIN LATERAL (SELECT * FROM {{schema}}.slots s WHERE s.job = i.job AND s.slot = i.slot LIMIT 1) s
),
c AS (
    SELECT coalesce($10::timestamptz,
                    CASE WHEN NOT w.waits THEN now()
                         WHEN w.ahead THEN greatest(w.until, w.t0)
                         ELSE ({{template "spinUntil" "w.until"}}) END) AS now,
           $10::timestamptz IS NULL AND w.ahead AS ahead,
           -- It sleeps for its slot, before judging or after writing.
           $10::timestamptz IS NULL AND w.sleeps AS sleeps,
           -- It slept before judging (see leaseAcquisition's probe).
           $10::timestamptz IS NULL AND w.sleeps AND NOT w.ahead AS waited
      FROM (SELECT x.*,
                   x.waits AND coalesce(x.until > x.t0, false) AS sleeps,
                   x.waits
                   AND NOT EXISTS (SELECT 1 FROM found)
                   AND NOT EXISTS (SELECT 1 FROM i CROSS JOIN LATERAL (
                                       SELECT 1 FROM {{schema}}.leases h WHERE h.name = i.lease_name AND h.expires_at > x.t0 LIMIT 1) h)
                   AS ahead
              FROM (SELECT coalesce(bool_or(i.wait_due), false) AS waits,
                           max(i.slot) FILTER (WHERE i.wait_due AND i.slot <= clock_timestamp() + $15::bigint * interval '1 microsecond') AS until,
                           clock_timestamp() AS t0
                      FROM i) x) w
),
prev AS (
    SELECT s.ord, s.status, s.owner, s.lease_name, s.generation, s.attempts, s.started_at, s.finished_at,
           -- Guarded: the run's lease is unexpired and its owner's process,
           -- if it keeps a liveness lock, still holds it.
           coalesce(g.generation = s.generation AND g.expires_at > c.now
                    AND (g.live_key IS NULL OR NOT pg_try_advisory_xact_lock(g.live_key)), false) AS guarded
      FROM found s
     CROSS JOIN c
      LEFT JOIN LATERAL (SELECT * FROM {{schema}}.leases g WHERE g.name = s.lease_name LIMIT 1) g ON true
),
{{if not .declared}}overrides AS MATERIALIZED (
    -- A statement sent ahead of its slot reads them after c (the
    -- argument names c), so after an after-mode wait, and through
    -- job_overrides_until: a pause written before is seen, or waits for its
    -- commit (migrations 007 and 009). One that does not sleep reads them from
    -- its snapshot, taken when it started, not before the slot: a pause
    -- acknowledged after that came after the slot was due, and the locks
    -- (a function call, tens of µs) would buy nothing.
    -- (gate reads this only when c.sleeps; a CTE nobody reads is never
    -- run.)
    SELECT o.*
      FROM c
     CROSS JOIN LATERAL {{schema}}.job_overrides_until(ARRAY(SELECT DISTINCT i.job FROM i WHERE c.now IS NOT NULL)) o
),
{{end}}gate AS (
    SELECT i.ord,
           CASE
             WHEN i.slot > c.now                                      THEN 'not_due'
             WHEN NOT coalesce(js.enabled_override, NOT i.disabled)   THEN 'paused'
             WHEN p.status = 'completed'                              THEN 'completed'
             WHEN p.status = 'skipped'                                THEN 'skipped'
             WHEN p.status = 'running' AND p.guarded                  THEN 'already_executing'
             -- store.SlotClaimParams.RetriesFailed, in SQL.
             WHEN p.status = 'failed' AND NOT (i.retry_failed AND i.retry_of IN (0, p.attempts))
                                                                      THEN 'failed'
             WHEN p.attempts >= i.max_attempts                        THEN 'attempts_exhausted'
           END AS refusal,
           -- Paused by an override rather than the declared value.
           js.enabled_override IS NOT NULL AS overridden
      FROM i
     CROSS JOIN c
      LEFT JOIN prev p ON p.ord = i.ord
     {{if .declared}}LEFT JOIN (SELECT NULL::text AS job, NULL::boolean AS enabled_override) js ON false{{else}}CROSS JOIN LATERAL (
           -- An override whose end (pause until) is at or before the slot
           -- decides no more: the declared value does (store.JobState.Override).
           SELECT CASE WHEN c.sleeps THEN (SELECT o.enabled_override FROM overrides o
                                            WHERE o.job = i.job AND (o.override_until IS NULL OR i.slot < o.override_until))
                       ELSE (SELECT x.enabled_override FROM {{schema}}.job_state x
                              WHERE x.job = i.job AND (x.override_until IS NULL OR i.slot < x.override_until) LIMIT 1) END AS enabled_override) js{{end}}
),
{{template "leaseAcquisition" args "wanted" "SELECT i.lease_name AS name, i.ttl_us FROM i JOIN gate g ON g.ord = i.ord AND g.refusal IS NULL" "owner" "$9" "liveKey" "$11"}},
claim AS (
    INSERT INTO {{schema}}.slots AS s (job, slot, status, owner, lease_name, generation, attempts, started_at, finished_at)
    SELECT i.job, i.slot, 'running', l.owner, l.name, l.generation, coalesce(p.attempts, 0) + 1, l.acquired_at, NULL
      FROM lease l
      JOIN i ON i.lease_name = l.name
      LEFT JOIN prev p ON p.ord = i.ord
    ON CONFLICT (job, slot) DO UPDATE
       SET status      = 'running',
           owner       = EXCLUDED.owner,
           lease_name  = EXCLUDED.lease_name,
           generation  = EXCLUDED.generation,
           attempts    = EXCLUDED.attempts,
           started_at  = EXCLUDED.started_at,
           finished_at = NULL
     WHERE s.status IN ('running', 'failed', 'buffered')
       AND s.attempts + 1 = EXCLUDED.attempts
       -- A running slot may be taken over only when its lease is dead. Under
       -- the same lease name that is certain: this statement just took it.
       AND (s.status <> 'running'
            OR s.lease_name = EXCLUDED.lease_name
            OR NOT EXISTS (SELECT 1 FROM {{schema}}.leases g
                            WHERE g.name = s.lease_name AND g.generation = s.generation
                              AND g.expires_at > EXCLUDED.started_at))
    RETURNING s.job, s.slot, s.status, s.owner, s.lease_name, s.generation, s.attempts, s.started_at
),
mark AS (
    INSERT INTO {{schema}}.slots AS s (job, slot, status, owner, lease_name, generation, attempts, started_at, finished_at)
    SELECT i.job, i.slot, m.status, $9, i.lease_name, 0, 0, c.now, CASE WHEN m.status = 'skipped' THEN c.now END
      FROM i
      JOIN gate g ON g.ord = i.ord AND g.refusal IS NULL
     CROSS JOIN c
     CROSS JOIN LATERAL (
           SELECT CASE WHEN (i.overlap = 'buffer-one'
                             -- No holder from at or before the slot's
                             -- instant: a late claim, not an overlap.
                             OR NOT EXISTS (SELECT 1 FROM {{schema}}.leases h
                                             WHERE h.name = i.lease_name AND h.acquired_at <= i.slot
                                               AND {{template "leaseHeld" args "alias" "h" "owner" "$9"}}))
                        AND NOT EXISTS (SELECT 1 FROM {{schema}}.slots b WHERE b.job = i.job AND b.status = 'buffered')
                       THEN 'buffered' ELSE 'skipped' END AS status) m
     WHERE NOT EXISTS (SELECT 1 FROM lease l WHERE l.name = i.lease_name)
       -- Lock order: every statement locks lease rows before slot rows.
       -- Sub-statements of a WITH run in no set order, so finish the lease
       -- upsert (an InitPlan, run before the first row) before inserting.
       AND (SELECT count(*) FROM lease) >= 0
       -- A busy lease's slot is retried, not recorded as an overlap.
       AND i.lease_name NOT IN (SELECT name FROM busy)
       -- Nor is a slot whose claim waits for the holder (store.OverlapWait).
       AND i.overlap <> 'wait'
    ON CONFLICT (job, slot) DO NOTHING
    RETURNING s.job, s.slot, s.status
),
skip AS (
    INSERT INTO {{schema}}.runs (job, slot, manual, catch_up, owner, generation, attempt, started_at, finished_at,
                                 success, skipped, reason, error, logs)
    SELECT m.job, m.slot, false, i.catch_up, $9, 0, 0, c.now, c.now, true, true, 'already_executing', '',
           ARRAY['Skipped: the previous run has not finished (lease ' || i.lease_name || ' held by '
                 || coalesce(h.owner || ' at generation ' || h.generation, 'another owner') || ')']
      FROM mark m
      JOIN i ON i.job = m.job AND i.slot = m.slot
     CROSS JOIN c
      LEFT JOIN {{schema}}.leases h ON h.name = i.lease_name
     WHERE m.status = 'skipped'
    RETURNING job, slot, id, started_at, logs
),
settle AS (
    INSERT INTO {{schema}}.slots AS s (job, slot, status, owner, lease_name, generation, attempts, started_at, finished_at)
    SELECT i.job, i.slot, 'skipped', $9, i.lease_name, 0, 0, c.now, c.now
      FROM i
      JOIN gate g ON g.ord = i.ord AND g.refusal = 'paused'
     CROSS JOIN c
     WHERE NOT EXISTS (SELECT 1 FROM prev p WHERE p.ord = i.ord)
       -- Lock order, as in mark: the batch's lease rows first.
       AND (SELECT count(*) FROM lease) >= 0
    ON CONFLICT (job, slot) DO NOTHING
    RETURNING s.job, s.slot
),
settled AS (
    INSERT INTO {{schema}}.runs (job, slot, manual, catch_up, owner, generation, attempt, started_at, finished_at,
                                 success, skipped, reason, error, logs)
    SELECT st.job, st.slot, false, i.catch_up, $9, 0, 0, c.now, c.now, true, true, 'paused', '',
           -- store.PausedSkipLine, in SQL.
           ARRAY[CASE WHEN g.overridden THEN 'Skipped: the job is paused' ELSE 'Skipped: the job is declared disabled' END]
      FROM settle st
      JOIN i ON i.job = st.job AND i.slot = st.slot
      JOIN gate g ON g.ord = i.ord
     CROSS JOIN c
    RETURNING job, slot, id, started_at, logs
),
-- Named, so that the answer can also travel as JSON (claim_committed,
-- migration 009), whose keys these are.
answer (ord, refusal,
        claim_status, claim_owner, claim_lease_name, claim_generation, claim_attempts, claim_started_at,
        prev_status, prev_owner, prev_lease_name, prev_generation, prev_attempts, prev_started_at, prev_finished_at,
        lease_owner, lease_generation, lease_acquired_at, lease_renewed_at, lease_expires_at,
        holder_name, holder_owner, holder_generation, holder_acquired_at, holder_renewed_at, holder_expires_at,
        recorded, skip_id, skip_started_at, skip_logs) AS MATERIALIZED (
    SELECT i.ord,
           coalesce(g.refusal, CASE WHEN i.lease_name IN (SELECT name FROM busy) THEN 'lease_busy' END),
           cl.status, cl.owner, cl.lease_name, cl.generation, cl.attempts, cl.started_at,
           p.status, p.owner, p.lease_name, p.generation, p.attempts, p.started_at, p.finished_at,
           l.owner, l.generation, l.acquired_at, l.renewed_at, l.expires_at,
           h.name, h.owner, h.generation, h.acquired_at, h.renewed_at, h.expires_at,
           coalesce(m.status, CASE WHEN ps.job IS NOT NULL THEN 'skipped' END),
           coalesce(sk.id, ps.id), coalesce(sk.started_at, ps.started_at), coalesce(sk.logs, ps.logs)
      FROM i
      JOIN gate g ON g.ord = i.ord
      LEFT JOIN claim cl ON cl.job = i.job AND cl.slot = i.slot
      LEFT JOIN prev p ON p.ord = i.ord
      LEFT JOIN lease l ON l.name = i.lease_name
      LEFT JOIN mark m ON m.job = i.job AND m.slot = i.slot
      LEFT JOIN skip sk ON sk.job = i.job AND sk.slot = i.slot
      LEFT JOIN settled ps ON ps.job = i.job AND ps.slot = i.slot
      -- LIMIT 1, as in prev: without it a large batch's plan read the whole
      -- leases table, one row per job, to hash it. Only for an item not
      -- claimed: a claimed one's lease is l, and its holder is not read.
      LEFT JOIN LATERAL (
          SELECT * FROM {{schema}}.leases
           WHERE cl.job IS NULL AND name = CASE WHEN p.guarded THEN p.lease_name ELSE i.lease_name END
           LIMIT 1
      ) h ON true
),
-- What answer says, told (see notice above): a run started (claim_status),
-- a slot recorded (recorded), or a refusal a retry would not change.
notice AS MATERIALIZED (
    {{template "notice" args "rows" "SELECT a.ord, CASE WHEN a.claim_status IS NOT NULL THEN 'c' ELSE 's' END AS kind, i.job, i.slot, coalesce(a.claim_owner, $9) AS owner FROM answer a JOIN i ON i.ord = a.ord WHERE a.claim_status IS NOT NULL OR a.recorded IS NOT NULL OR a.refusal NOT IN ('not_due', 'lease_busy')"}}
)
{{if .json}}SELECT jsonb_agg(to_jsonb(x) ORDER BY x.ord) FROM (
{{end}}SELECT a.*, fin.due_at, fin.read_at
  FROM (SELECT count(*) AS n FROM answer) done
 CROSS JOIN (SELECT count(*) AS n FROM notice) told
 -- fin depends on done and told, so it reads the clock once answer and
 -- the notices are complete.
 CROSS JOIN LATERAL (
       SELECT CASE WHEN done.n >= 0 AND told.n >= 0 AND c.ahead THEN c.now END AS due_at, clock_timestamp() AS read_at
         FROM c) fin
 CROSS JOIN answer a
{{if .json}}) x{{else}} ORDER BY a.ord{{end}}
