package postgres

import "strings"

// queries holds every statement with the schema filled in, built once per
// Store. {{schema}} marks where the quoted schema name goes.
type queries struct {
	leaseAcquire, leaseRenew, leaseRenewBatch, leaseRelease, leaseGet, leaseFence string
	slotClaim, slotFinish, slotGet, slotListInterrupted, slotAbandon              string
	slotComplete, jobRegister, slotSkip                                           string
	// slotClaimDeclared is slotClaim without the pause overrides: the
	// declared values decide, for when job_state cannot be read.
	slotClaimDeclared                                    string
	runInsert, runList, prune, jobStateSet, jobStateList string
	replicaHeartbeat, replicaList, replicaRemove         string
	alertRaise, alertResolve, alertList, leaseList       string
}

func newQueries(schema string) queries {
	q := queries{
		leaseAcquire:        leaseAcquireSQL,
		leaseRenew:          leaseRenewSQL,
		leaseRenewBatch:     leaseRenewBatchSQL,
		jobStateSet:         jobStateSetSQL,
		jobStateList:        jobStateListSQL,
		leaseRelease:        leaseReleaseSQL,
		leaseGet:            leaseGetSQL,
		leaseFence:          leaseFenceSQL,
		slotClaim:           slotClaimSQL,
		slotClaimDeclared:   strings.Replace(slotClaimSQL, jobStateJoin, noJobStateJoin, 1),
		slotFinish:          slotFinishSQL,
		slotGet:             slotGetSQL,
		slotListInterrupted: slotListInterruptedSQL,
		slotAbandon:         slotAbandonSQL,
		slotComplete:        slotCompleteSQL,
		jobRegister:         jobRegisterSQL,
		slotSkip:            slotSkipSQL,
		runInsert:           runInsertSQL,
		runList:             runListSQL,
		prune:               pruneSQL,
		replicaHeartbeat:    replicaHeartbeatSQL,
		replicaList:         replicaListSQL,
		replicaRemove:       replicaRemoveSQL,
		alertRaise:          alertRaiseSQL,
		alertResolve:        alertResolveSQL,
		alertList:           alertListSQL,
		leaseList:           leaseListSQL,
	}
	for _, p := range []*string{
		&q.leaseAcquire, &q.leaseRenew, &q.leaseRenewBatch, &q.jobStateSet, &q.jobStateList, &q.leaseRelease, &q.leaseGet, &q.leaseFence,
		&q.slotClaim, &q.slotClaimDeclared, &q.slotFinish, &q.slotGet, &q.slotListInterrupted, &q.slotAbandon, &q.slotComplete, &q.jobRegister, &q.slotSkip, &q.runInsert, &q.runList, &q.prune,
		&q.replicaHeartbeat, &q.replicaList, &q.replicaRemove, &q.alertRaise, &q.alertResolve, &q.alertList, &q.leaseList,
	} {
		*p = withSchema(schema, *p)
	}
	return q
}

const leaseColumns = `name, owner, generation, acquired_at, renewed_at, expires_at`

// leaseAcquisition is the CTEs of every lease acquisition, the plain one
// and the claim's, so that the two cannot drift apart. wanted is a SELECT
// of (name, ttl_us): the leases owner (a parameter) asks for, with their
// TTLs in µs; liveKey is the parameter of owner's liveness key, or 0. The
// clock is c.now. The last CTE, lease, has a row for each lease taken,
// with leaseColumns, at its new generation.
//
// A lease is taken when, at the row's newest version, nobody holds it: it
// expired, its owner's process is gone (the owner's session holds its
// liveness lock, and the transaction-level try-lock conflicts with it), or
// it was never taken. Never by waiting for a handler: a handler's fenced
// transaction, which may last its whole run, holds the row FOR KEY SHARE
// (see leaseFenceSQL), and this statement never asks for a lock that
// conflicts with that one and waits for it.
//
//   - probe locks, in name order, the rows the snapshot shows as free,
//     FOR NO KEY UPDATE: that waits for a claim, renewal or release
//     writing the row (one statement, milliseconds), never for a fence,
//     and re-reads the row once that writer commits: a lease the writer
//     took is held now, and drops out. (Before, probe skipped such rows and
//     the upsert waited for the writer and then locked the row FOR UPDATE,
//     behind the fence the writer's handler had taken meanwhile: finding
//     14 of docs/reliability.md.)
//   - taken locks those rows again FOR UPDATE SKIP LOCKED: the one mode
//     that conflicts with a fence, so it passes over a row that a fenced
//     transaction holds. Such a lease is busy: expired, but its deposed
//     writer, frozen or cut off, is still inside a transaction fenced under
//     it. Its takeover is turned down at once (the claim answers
//     lease_busy) instead of waiting for that transaction as long as it
//     lasts.
//   - taken_over moves each row taken to owner at the next generation.
//     This transaction holds the row FOR UPDATE until it commits, so a
//     fence of the old generation waits for the commit and then fails.
//   - created inserts the leases the snapshot did not have. ON CONFLICT DO
//     NOTHING: when a concurrent acquisition inserted the row first, this
//     one waits for that statement's commit and takes no lock on the row
//     (DO UPDATE would, behind a fence), so the lease reads as held.
//
// Every generation a lease takes is at least epoch's floor (see
// generationFloor), so a token is never issued twice across a failover.
//
// Rows are locked in name order, lease rows before slot rows (see
// slotClaimSQL), so two statements cannot deadlock.
func leaseAcquisition(wanted, owner, liveKey string) string {
	return `wanted AS (` + wanted + `),
epoch AS (
    SELECT ` + generationFloor + ` AS floor
),
probe AS (
    SELECT x.name
      FROM {{schema}}.leases x
     CROSS JOIN c
     WHERE x.name IN (SELECT name FROM wanted) AND NOT ` + leaseHeld("x", owner) + `
     ORDER BY x.name
       FOR NO KEY UPDATE OF x
),
taken AS (
    SELECT x.name FROM {{schema}}.leases x WHERE x.name IN (SELECT name FROM probe)
       FOR UPDATE OF x SKIP LOCKED
),
busy AS (
    SELECT name FROM probe EXCEPT SELECT name FROM taken
),
taken_over AS (
    UPDATE {{schema}}.leases AS t
       SET owner       = ` + owner + `,
           generation  = greatest(t.generation + 1, (SELECT floor FROM epoch)),
           acquired_at = c.now,
           renewed_at  = c.now,
           expires_at  = c.now + w.ttl_us * interval '1 microsecond',
           live_key    = nullif(` + liveKey + `::bigint, 0)
      FROM wanted w
      JOIN taken k ON k.name = w.name
     CROSS JOIN c
     WHERE t.name = w.name
       AND NOT ` + leaseHeld("t", owner) + `
    RETURNING ` + prefixed("t", leaseColumns) + `
),
created AS (
    INSERT INTO {{schema}}.leases AS t (name, owner, generation, acquired_at, renewed_at, expires_at, live_key)
    SELECT w.name, ` + owner + `, greatest(1, (SELECT floor FROM epoch)), c.now, c.now, c.now + w.ttl_us * interval '1 microsecond', nullif(` + liveKey + `::bigint, 0)
      FROM wanted w
     CROSS JOIN c
     WHERE NOT EXISTS (SELECT 1 FROM {{schema}}.leases x WHERE x.name = w.name)
       -- probe and taken lock first (an InitPlan, run before the first row).
       AND (SELECT count(*) FROM taken) >= 0
     ORDER BY w.name
    ON CONFLICT (name) DO NOTHING
    RETURNING ` + prefixed("t", leaseColumns) + `
),
lease AS (
    SELECT * FROM taken_over UNION ALL SELECT * FROM created
)`
}

// generationFloor is the least generation a lease may take on this
// server: (timeline − 1) · 2^40, so 0 on a database that was never failed
// over (generations go 1, 2, … as they always did) and above any generation
// an earlier timeline can have issued once a standby is promoted.
//
// That is what keeps a fencing token from being issued twice. An
// asynchronous standby promoted after replication was cut off has lost the
// old primary's last commits; one of them may have given holder A
// generation n. Counting on from the lease row it has, the new primary
// would give generation n again, to holder B, and A's writer (frozen
// through the failover) would then pass fence(lease, n) there: two owners,
// one token. A promotion always starts a new timeline, so on the new
// primary B's generation is at least 2^40 · (timeline − 1), above every n,
// and A's fence fails. The timeline is the one the server writes WAL on
// now (the first 8 hex digits of the current WAL file's name), which
// changes the moment a promotion ends, before any write is accepted, unlike
// pg_control_checkpoint(), which lags until the next checkpoint. On a
// standby (in recovery) the floor is 0: the statement fails on its write
// anyway, as read-only. A counter of 2^40 per lease and timeline lasts
// thousands of years at one acquisition a second.
const generationFloor = `CASE WHEN pg_is_in_recovery() THEN 0
           ELSE ((('x' || left(pg_walfile_name(pg_current_wal_lsn()), 8))::bit(32)::bigint - 1) << 40)
      END`

// prefixed qualifies each of the comma-separated columns with alias.
func prefixed(alias, columns string) string {
	cols := strings.Split(columns, ", ")
	for i, c := range cols {
		cols[i] = alias + "." + c
	}
	return strings.Join(cols, ", ")
}

// leaseHeld is true for the lease row alias that someone other than the
// contender owner holds at c.now: unexpired, and its owner's process not
// gone.
func leaseHeld(alias, owner string) string {
	return `(` + alias + `.expires_at > c.now AND NOT (` + alias + `.live_key IS NOT NULL AND ` + alias + `.owner <> ` + owner +
		` AND pg_try_advisory_xact_lock(` + alias + `.live_key)))`
}

// leaseAcquireSQL takes the lease when it is free or expired, in one atomic
// statement (see leaseAcquisition): concurrent contenders serialise on the
// row, and exactly one gets each generation. When nothing was taken, the
// second branch reports the holder (as of the statement's snapshot; no row
// when the holder's row is newer than it).
//
// $1 name, $2 owner, $3 TTL in µs, $4 pinned now or NULL, $5 live key or 0.
var leaseAcquireSQL = `
WITH c AS (SELECT coalesce($4::timestamptz, now()) AS now),
` + leaseAcquisition("SELECT $1::text AS name, $3::bigint AS ttl_us", "$2", "$5") + `
SELECT true, ` + leaseColumns + ` FROM lease
UNION ALL
SELECT false, ` + leaseColumns + ` FROM {{schema}}.leases
 WHERE name = $1 AND NOT EXISTS (SELECT 1 FROM lease)`

// leaseRenewSQL extends the lease only for its owner at its generation and
// only before it expired: a holder that lost it gets no row back.
//
// $1 name, $2 owner, $3 generation, $4 TTL in µs, $5 pinned now or NULL.
const leaseRenewSQL = `
UPDATE {{schema}}.leases AS t
   SET expires_at = c.now + $4::bigint * interval '1 microsecond',
       renewed_at = c.now
  FROM (SELECT coalesce($5::timestamptz, now()) AS now) c
 WHERE t.name = $1 AND t.owner = $2 AND t.generation = $3 AND t.expires_at > c.now
RETURNING t.name, t.owner, t.generation, t.acquired_at, t.renewed_at, t.expires_at`

// leaseReleaseSQL expires the lease without deleting it, so the generation
// never goes back, and only for the owner's own generation.
//
// $1 name, $2 owner, $3 generation, $4 pinned now or NULL.
const leaseReleaseSQL = `
UPDATE {{schema}}.leases
   SET expires_at = least(expires_at, coalesce($4::timestamptz, now()))
 WHERE name = $1 AND owner = $2 AND generation = $3`

// leaseRenewBatchSQL is leaseRenewSQL for many leases at once.
//
// $1 names, $2 owners, $3 generations, $4 TTLs in µs, $5 pinned now or NULL.
const leaseRenewBatchSQL = `
UPDATE {{schema}}.leases AS t
   SET expires_at = c.now + v.ttl_us * interval '1 microsecond',
       renewed_at = c.now
  FROM (SELECT coalesce($5::timestamptz, now()) AS now) c,
       unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[]) AS v(name, owner, generation, ttl_us)
 WHERE t.name = v.name AND t.owner = v.owner AND t.generation = v.generation AND t.expires_at > c.now
RETURNING t.name, t.owner, t.generation, t.acquired_at, t.renewed_at, t.expires_at`

const leaseGetSQL = `SELECT ` + leaseColumns + ` FROM {{schema}}.leases WHERE name = $1`

// leaseFenceSQL runs inside the caller's transaction. FOR KEY SHARE
// conflicts with the FOR UPDATE lock a takeover takes (see leaseAcquisition),
// so the takeover waits for the commit. It does not conflict with the
// FOR NO KEY UPDATE of a renewal: with FOR SHARE, a handler's open fenced
// transaction held up its replica's renewal batch, every lease it renews,
// until the commit, and leases of other jobs could expire meanwhile. The
// lock outlives a renewal: PostgreSQL carries key-share lockers over to
// the new row version of an update that leaves the key as it was.
const leaseFenceSQL = `
SELECT 1 FROM {{schema}}.leases
 WHERE name = $1 AND generation = $2 AND expires_at > coalesce($3::timestamptz, clock_timestamp())
   FOR KEY SHARE`

const slotColumns = `job, slot, status, owner, lease_name, generation, attempts, started_at, finished_at`

// slotClaimSQL claims a batch of (job, slot)s, each with its guarding
// lease, in one statement:
//
//   - i unpacks the items; prev is each slot's row as of the statement's
//     snapshot, and whether the lease that guards it is still live.
//   - gate refuses from the snapshot: a slot not yet due by the database
//     clock, a paused job (override, else the declared value), a completed
//     or skipped slot, one still running under a live lease, or one out of
//     attempts. A refused item touches nothing, except that a paused one
//     is settled (see settle).
//   - wanted, probe, taken, busy, taken_over, created and lease are the
//     acquisition of the items' leases (see leaseAcquisition), the point
//     where contenders serialise; only its winners go on. A lease whose
//     owner's liveness lock is free (its process is gone) is taken over at
//     once. It waits for no handler's fenced transaction: a lease whose
//     deposed writer is still inside one (expired, or dead, by the
//     snapshot, and fenced) is busy, and its item is refused lease_busy
//     and writes nothing (waiting for that transaction, which lasts as
//     long as its writer is frozen or cut off, held up every item of the
//     batch, every job due at that instant); a lease that a concurrent
//     claim took reads as held, and its item goes on to mark.
//   - claim inserts the slot, or takes over a failed, buffered or
//     interrupted one; its WHERE is re-checked on the newest row version
//     (attempts must be what the gate saw), so a concurrent completion is
//     never overwritten.
//   - mark records an overlap (gate passed, lease held by another run) as
//     skipped or buffered, and skip writes the skip run row naming the
//     holder. ON CONFLICT DO NOTHING makes exactly one replica record it.
//     A late claim is buffered, not skipped, whatever the policy: by the
//     statement's snapshot no holder that took the lease at or before the
//     slot's instant holds it, so the lease was free when the slot came
//     due and the holder (a catch-up or resumed run of an earlier slot,
//     usually) started after it. That includes a holder that took the
//     lease concurrently, after the snapshot, which is later still. The
//     slot runs when the holder's run ends (see SlotFinish's buffered).
//   - settle records a due slot of a paused job that has no row yet as
//     skipped, without a run row (the job's pause is what operators see,
//     and a paused every-second job would otherwise write a row a second).
//     The slot is then final: a replica whose claim arrives after the
//     resume (its clock runs behind, a not_due retry, a catch-up) finds it
//     skipped instead of running it. An existing row is never touched, and
//     ON CONFLICT DO NOTHING makes concurrent refusals write one row. The
//     refusal stays paused; a later claim of the slot is refused skipped.
//     settle is the one slot write not preceded by its lease's row lock (a
//     paused item takes no lease). Two batches could then lock two slots
//     in opposite orders only if each saw a different job of the two
//     paused (pause and resume committed between their snapshots, at the
//     same slot instant); PostgreSQL would detect that deadlock and fail
//     one statement, which the scheduler handles as an unreachable store.
//
// $1 jobs, $2 slots, $3 lease names, $4 declared disabled, $5 overlap
// policies, $6 max attempts, $7 TTLs in µs, $8 catch-up flags, $9 owner,
// $10 pinned now or NULL, $11 live key or 0.
var slotClaimSQL = `
WITH c AS (SELECT coalesce($10::timestamptz, now()) AS now),
i AS (
    SELECT *
      FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::boolean[], $5::text[],
                  $6::integer[], $7::bigint[], $8::boolean[])
           WITH ORDINALITY AS i(job, slot, lease_name, disabled, overlap, max_attempts, ttl_us, catch_up, ord)
),
prev AS (
    SELECT i.ord, s.status, s.owner, s.lease_name, s.generation, s.attempts, s.started_at, s.finished_at,
           -- Guarded: the run's lease is unexpired and its owner's process,
           -- if it keeps a liveness lock, still holds it.
           coalesce(g.generation = s.generation AND g.expires_at > c.now
                    AND (g.live_key IS NULL OR NOT pg_try_advisory_xact_lock(g.live_key)), false) AS guarded
      FROM i
     CROSS JOIN c
      JOIN {{schema}}.slots s ON s.job = i.job AND s.slot = i.slot
      LEFT JOIN {{schema}}.leases g ON g.name = s.lease_name
),
gate AS (
    SELECT i.ord,
           CASE
             WHEN i.slot > c.now                                      THEN 'not_due'
             WHEN NOT coalesce(js.enabled_override, NOT i.disabled)   THEN 'paused'
             WHEN p.status = 'completed'                              THEN 'completed'
             WHEN p.status = 'skipped'                                THEN 'skipped'
             WHEN p.status = 'running' AND p.guarded                  THEN 'already_executing'
             WHEN p.attempts >= i.max_attempts                        THEN 'attempts_exhausted'
           END AS refusal
      FROM i
     CROSS JOIN c
      LEFT JOIN prev p ON p.ord = i.ord
     ` + jobStateJoin + `
),
` + leaseAcquisition(`SELECT i.lease_name AS name, i.ttl_us FROM i JOIN gate g ON g.ord = i.ord AND g.refusal IS NULL`, "$9", "$11") + `,
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
                                               AND ` + leaseHeld("h", "$9") + `))
                        AND NOT EXISTS (SELECT 1 FROM {{schema}}.slots b WHERE b.job = i.job AND b.status = 'buffered')
                       THEN 'buffered' ELSE 'skipped' END AS status) m
     WHERE NOT EXISTS (SELECT 1 FROM lease l WHERE l.name = i.lease_name)
       -- Lock order: every statement locks lease rows before slot rows.
       -- Sub-statements of a WITH run in no set order, so finish the lease
       -- upsert (an InitPlan, run before the first row) before inserting.
       AND (SELECT count(*) FROM lease) >= 0
       -- A busy lease's slot is retried, not recorded as an overlap.
       AND i.lease_name NOT IN (SELECT name FROM busy)
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
)
SELECT coalesce(g.refusal, CASE WHEN i.lease_name IN (SELECT name FROM busy) THEN 'lease_busy' END),
       cl.status, cl.owner, cl.lease_name, cl.generation, cl.attempts, cl.started_at,
       p.status, p.owner, p.lease_name, p.generation, p.attempts, p.started_at, p.finished_at,
       l.owner, l.generation, l.acquired_at, l.renewed_at, l.expires_at,
       h.name, h.owner, h.generation, h.acquired_at, h.renewed_at, h.expires_at,
       m.status, sk.id, sk.started_at, sk.logs
  FROM i
  JOIN gate g ON g.ord = i.ord
  LEFT JOIN claim cl ON cl.job = i.job AND cl.slot = i.slot
  LEFT JOIN prev p ON p.ord = i.ord
  LEFT JOIN lease l ON l.name = i.lease_name
  LEFT JOIN mark m ON m.job = i.job AND m.slot = i.slot
  LEFT JOIN skip sk ON sk.job = i.job AND sk.slot = i.slot
  LEFT JOIN LATERAL (
      SELECT * FROM {{schema}}.leases
       WHERE name = CASE WHEN p.guarded THEN p.lease_name ELSE i.lease_name END
  ) h ON true
 ORDER BY i.ord`

// jobStateJoin is where slotClaimSQL reads the pause overrides, and
// noJobStateJoin what replaces it when they cannot be read (job_state is
// missing or damaged): no override, so the declared values decide.
const (
	jobStateJoin   = `LEFT JOIN {{schema}}.job_state js ON js.job = i.job`
	noJobStateJoin = `LEFT JOIN (SELECT NULL::text AS job, NULL::boolean AS enabled_override) js ON false`
)

// slotFinishSQL ends a run in one round trip: slot marked and lease
// released, both only for the claim's owner and generation, and the run row
// written whatever they did, once per holding (a retry returns the row the
// first attempt wrote). When a slot was given but not marked (the
// generation no longer held it: it was taken over), the run row records
// that, not the handler's verdict: success false, and $18 (the error,
// prefixed with the takeover; see store.TakenOverError) as its error.
//
// $1 job, $2 slot, $3 lease name, $4 owner, $5 generation, $6 status,
// $7 pinned now or NULL, $8 manual, $9 catch-up, $10 attempt,
// $11 started_at or NULL, $12 finished_at or NULL, $13 success,
// $14 skipped, $15 reason, $16 error, $17 logs, $18 error if taken over,
// $19 error if the slot does not end completed, or ”.
const slotFinishSQL = `
WITH c AS (SELECT coalesce($7::timestamptz, now()) AS now),
l AS (
    UPDATE {{schema}}.leases t
       SET expires_at = least(t.expires_at, c.now)
      FROM c
     WHERE t.name = $3 AND t.owner = $4 AND t.generation = $5
    RETURNING 1
),
s AS (
    -- A slot this holding completed already (complete() in the handler's
    -- transaction, or this finish retried after its answer was lost)
    -- stays completed, with its finish time. A failed one is not taken
    -- for this holding's: SlotAbandon may have ended it (a retry of a
    -- failed finish then reads as a takeover, and returns the first row).
    -- Status running leaves a running slot running (for a resume) and
    -- unfinished.
    UPDATE {{schema}}.slots t
       SET status      = CASE WHEN t.status = 'running' THEN $6 ELSE t.status END,
           finished_at = CASE WHEN t.status = 'running' AND $6 = 'running' THEN NULL
                              ELSE coalesce(t.finished_at, c.now) END
      FROM c
     WHERE t.job = $1 AND t.slot = $2 AND t.lease_name = $3 AND t.owner = $4
       AND t.generation = $5 AND t.status IN ('running', 'completed')
       -- Lock order, as in slotClaimSQL: the lease row first.
       AND (SELECT count(*) FROM l) >= 0
    RETURNING t.started_at, t.status
),
fate AS (
    SELECT $2::timestamptz IS NOT NULL AND NOT EXISTS (SELECT 1 FROM s) AS taken_over,
           -- The slot does not end completed: the run row takes $19. With
           -- status running (a run left to resume), a takeover is the
           -- resume that followed.
           $19 <> '' AND (EXISTS (SELECT 1 FROM s WHERE s.status <> 'completed')
                          OR ($6 = 'running' AND NOT EXISTS (SELECT 1 FROM s))) AS not_completed
),
r AS (
    INSERT INTO {{schema}}.runs (job, slot, manual, catch_up, owner, generation, lease_name, attempt,
                                 started_at, finished_at, success, skipped, reason, error, logs)
    SELECT $1, $2, $8, $9, $4, $5, $3, $10,
           coalesce($11::timestamptz, (SELECT started_at FROM s), c.now),
           coalesce($12::timestamptz, c.now), $13 AND NOT fate.taken_over AND NOT fate.not_completed, $14, $15,
           CASE WHEN fate.not_completed THEN $19::text WHEN fate.taken_over THEN $18::text ELSE $16 END, $17
      FROM c CROSS JOIN fate
    -- A holding has one run row: a retried finish returns the first.
    ON CONFLICT (lease_name, generation) WHERE lease_name <> '' DO NOTHING
    RETURNING ` + runColumns + `
),
row AS (
    SELECT * FROM r
    UNION ALL
    SELECT ` + runColumns + ` FROM {{schema}}.runs
     WHERE lease_name = $3 AND generation = $5 AND NOT EXISTS (SELECT 1 FROM r)
)
SELECT EXISTS (SELECT 1 FROM s), (SELECT status FROM s), EXISTS (SELECT 1 FROM l),
       (SELECT min(b.slot) FROM {{schema}}.slots b WHERE b.job = $1 AND b.status = 'buffered'),
       row.*
  FROM row`

// jobStateSetSQL: $1 job, $2 enabled override or NULL, $3 by, $4 note,
// $5 pinned now or NULL.
const jobStateSetSQL = `
INSERT INTO {{schema}}.job_state AS j (job, enabled_override, override_by, override_at, note)
VALUES ($1, $2, $3, coalesce($5::timestamptz, now()), $4)
ON CONFLICT (job) DO UPDATE
   SET enabled_override = EXCLUDED.enabled_override,
       override_by      = EXCLUDED.override_by,
       override_at      = EXCLUDED.override_at,
       note             = EXCLUDED.note
RETURNING job, enabled_override, override_by, override_at, note`

const jobStateListSQL = `SELECT job, enabled_override, override_by, override_at, note FROM {{schema}}.job_state ORDER BY job COLLATE "C"`

// slotListInterruptedSQL finds running slots whose run is dead. The partial
// index on running slots keeps it cheap: a handful of rows, whatever the
// history. The liveness try-lock is released when the statement's
// transaction ends.
//
// $1 pinned now or NULL.
const slotListInterruptedSQL = `
SELECT s.job, s.slot, s.status, s.owner, s.lease_name, s.generation, s.attempts, s.started_at, s.finished_at
  FROM {{schema}}.slots s
  LEFT JOIN {{schema}}.leases l ON l.name = s.lease_name
 WHERE s.status = 'running'
   AND (l.name IS NULL
        OR l.generation <> s.generation
        OR l.expires_at <= coalesce($1::timestamptz, now())
        OR (l.live_key IS NOT NULL AND pg_try_advisory_xact_lock(l.live_key)))
 ORDER BY s.slot`

// slotAbandonSQL ends as failed a running slot whose run is dead (as in
// slotListInterruptedSQL, for the grace) and has no attempt left, for the
// dead claim only, and writes its run row only when it did. It reads the
// lease row without locking it, and locks only the slot row.
//
// $1 job, $2 slot, $3 lease name, $4 owner, $5 generation, $6 max attempts,
// $7 pinned now or NULL, $8 error, $9 logs, $10 grace in µs.
const slotAbandonSQL = `
WITH c AS (SELECT coalesce($7::timestamptz, now()) AS now),
s AS (
    UPDATE {{schema}}.slots t
       SET status = 'failed', finished_at = c.now
      FROM c
     WHERE t.job = $1 AND t.slot = $2 AND t.lease_name = $3 AND t.owner = $4 AND t.generation = $5
       AND t.status = 'running' AND t.attempts >= $6
       -- Not possibly alive: the claim's generation expired before
       -- now - grace, or its owner's process is gone; or a later generation
       -- took the lease before now - grace.
       AND NOT EXISTS (SELECT 1 FROM {{schema}}.leases l
                        WHERE l.name = $3
                          AND CASE WHEN l.generation = $5
                                   THEN l.expires_at > c.now - $10::bigint * interval '1 microsecond'
                                        AND (l.live_key IS NULL OR NOT pg_try_advisory_xact_lock(l.live_key))
                                   ELSE l.acquired_at > c.now - $10::bigint * interval '1 microsecond'
                              END)
    RETURNING t.attempts, t.started_at
),
r AS (
    INSERT INTO {{schema}}.runs (job, slot, manual, catch_up, owner, generation, attempt,
                                 started_at, finished_at, success, skipped, reason, error, logs)
    SELECT $1, $2, false, false, $4, $5, s.attempts, s.started_at, c.now, false, false, '', $8, $9
      FROM s CROSS JOIN c
    RETURNING ` + runColumns + `
)
SELECT (SELECT min(b.slot) FROM {{schema}}.slots b WHERE b.job = $1 AND b.status = 'buffered'), r.*
  FROM r`

// slotCompleteSQL runs inside the caller's transaction: the fence of
// leaseFenceSQL (fenced, a row only when the generation holds the lease)
// and, only then, the slot the holding runs marked completed, in one round
// trip. The fence's row lock keeps a takeover out until the caller's
// commit, so the completion commits with the caller's effect or not at all;
// the lease row is locked before the slot row, as in every statement.
//
// $1 job, $2 slot, $3 lease name, $4 generation, $5 pinned now or NULL.
const slotCompleteSQL = `
WITH fenced AS (
    SELECT 1 FROM {{schema}}.leases
     WHERE name = $3 AND generation = $4 AND expires_at > coalesce($5::timestamptz, clock_timestamp())
       FOR KEY SHARE
),
completed AS (
    UPDATE {{schema}}.slots
       SET status = 'completed', finished_at = coalesce($5::timestamptz, clock_timestamp())
     WHERE job = $1 AND slot = $2 AND lease_name = $3 AND generation = $4 AND status = 'running'
       AND EXISTS (SELECT 1 FROM fenced)
)
SELECT 1 FROM fenced`

// jobRegisterSQL records each job's first registration, once: a job that
// has slots from before the jobs table existed (an upgraded database) was
// first seen at its earliest slot, any other now. It returns every job's
// first registration in the order given.
//
// $1 jobs, $2 pinned now or NULL.
const jobRegisterSQL = `
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
 ORDER BY i.ord`

const slotGetSQL = `SELECT ` + slotColumns + ` FROM {{schema}}.slots WHERE job = $1 AND slot = $2`

const runColumns = `id, job, slot, manual, catch_up, owner, generation, lease_name, attempt, started_at, finished_at, success, skipped, reason, error, logs`

// runInsertSQL writes a run row; for a holding that has one already (a
// retry after a lost answer) it writes nothing and returns that row.
//
// $1 job, $2 slot or NULL, $3 manual, $4 catch-up, $5 owner,
// $6 generation, $7 attempt, $8 started_at or NULL, $9 finished_at or NULL,
// $10 success, $11 skipped, $12 reason, $13 error, $14 logs, $15 pinned now
// or NULL, $16 lease name or ”.
const runInsertSQL = `
WITH c AS (SELECT coalesce($15::timestamptz, now()) AS now),
r AS (
    INSERT INTO {{schema}}.runs (job, slot, manual, catch_up, owner, generation, lease_name, attempt,
                                 started_at, finished_at, success, skipped, reason, error, logs)
    SELECT $1, $2, $3, $4, $5, $6, $16, $7, coalesce($8::timestamptz, c.now),
           coalesce($9::timestamptz, $8::timestamptz, c.now), $10, $11, $12, $13, $14
      FROM c
    ON CONFLICT (lease_name, generation) WHERE lease_name <> '' DO NOTHING
    RETURNING ` + runColumns + `
)
SELECT * FROM r
UNION ALL
SELECT ` + runColumns + ` FROM {{schema}}.runs
 WHERE $16 <> '' AND lease_name = $16 AND generation = $6 AND NOT EXISTS (SELECT 1 FROM r)`

// slotSkipSQL records slots nobody will run (see Store.SlotSkip): a slot
// row, skipped and final, for each item whose slot has none and whose
// After the database clock has reached, and a skip run row for each row so
// inserted. ON CONFLICT DO NOTHING makes concurrent callers, and a claim,
// record a slot once: whoever writes its row first decides. Only slot rows
// are locked (no lease row), in the items' order, the claims' order.
//
// $1 jobs, $2 slots, $3 lease names, $4 afters, $5 catch-up flags,
// $6 reasons, $7 log lines (” for none), $8 owner, $9 pinned now or NULL.
const slotSkipSQL = `
WITH c AS (SELECT coalesce($9::timestamptz, now()) AS now),
i AS (
    SELECT *
      FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::timestamptz[], $5::boolean[], $6::text[], $7::text[])
           WITH ORDINALITY AS i(job, slot, lease_name, after, catch_up, reason, log, ord)
),
s AS (
    INSERT INTO {{schema}}.slots AS s (job, slot, status, owner, lease_name, generation, attempts, started_at, finished_at)
    SELECT i.job, i.slot, 'skipped', $8, i.lease_name, 0, 0, c.now, c.now
      FROM i
     CROSS JOIN c
     WHERE i.after <= c.now
     ORDER BY i.ord
    ON CONFLICT (job, slot) DO NOTHING
    RETURNING s.job, s.slot
),
r AS (
    INSERT INTO {{schema}}.runs (job, slot, manual, catch_up, owner, generation, attempt, started_at, finished_at,
                                 success, skipped, reason, error, logs)
    SELECT i.job, i.slot, false, i.catch_up, $8, 0, 0, c.now, c.now, true, true, i.reason, '',
           CASE WHEN i.log = '' THEN '{}'::text[] ELSE ARRAY[i.log] END
      FROM s
      JOIN i ON i.job = s.job AND i.slot = s.slot
     CROSS JOIN c
    RETURNING ` + runColumns + `
)
SELECT r.* FROM r JOIN i ON i.job = r.job AND i.slot = r.slot ORDER BY i.ord`

// runListSQL: $1 job or ” for all, $2 before id or 0, $3 limit.
const runListSQL = `
SELECT ` + runColumns + ` FROM {{schema}}.runs
 WHERE ($1 = '' OR job = $1) AND ($2 = 0 OR id < $2)
 ORDER BY id DESC
 LIMIT $3`

// pruneSQL keeps each job's latest claim whatever its age: it is the record
// that the slot already ran, so a monthly job with a month-long catch-up
// window is not run again by a deploy on the 10th. Likewise each job's
// latest run stays for "last run" displays. Resolved alerts go by the time
// they were resolved (an open alert stays, however old), and replicas by
// their last heartbeat: a replica that stopped heartbeating that long ago
// crashed without removing its row. Those two are not counted.
//
// $1 cutoff.
const pruneSQL = `
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
SELECT (SELECT count(*) FROM ds), (SELECT count(*) FROM dr)`
