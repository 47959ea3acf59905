package postgres

// queries holds every statement with the schema filled in, built once per
// Store. {{schema}} marks where the quoted schema name goes.
type queries struct {
	leaseAcquire, leaseRenew, leaseRelease, leaseGet, leaseFence string
	slotClaim, slotFinish, slotGet                               string
	runInsert, runList, prune                                    string
}

func newQueries(schema string) queries {
	q := queries{
		leaseAcquire: leaseAcquireSQL,
		leaseRenew:   leaseRenewSQL,
		leaseRelease: leaseReleaseSQL,
		leaseGet:     leaseGetSQL,
		leaseFence:   leaseFenceSQL,
		slotClaim:    slotClaimSQL,
		slotFinish:   slotFinishSQL,
		slotGet:      slotGetSQL,
		runInsert:    runInsertSQL,
		runList:      runListSQL,
		prune:        pruneSQL,
	}
	for _, p := range []*string{
		&q.leaseAcquire, &q.leaseRenew, &q.leaseRelease, &q.leaseGet, &q.leaseFence,
		&q.slotClaim, &q.slotFinish, &q.slotGet, &q.runInsert, &q.runList, &q.prune,
	} {
		*p = withSchema(schema, *p)
	}
	return q
}

const leaseColumns = `name, owner, generation, acquired_at, renewed_at, expires_at`

// leaseAcquireSQL takes the lease when it is free or expired, in one atomic
// statement: concurrent contenders serialise on the primary key, and the
// loser re-evaluates the WHERE on the winner's row, so exactly one gets each
// generation. When nothing was taken, the second branch reports the holder
// (as of the statement's snapshot).
//
// $1 name, $2 owner, $3 TTL in µs, $4 pinned now or NULL.
const leaseAcquireSQL = `
WITH c AS (SELECT coalesce($4::timestamptz, now()) AS now),
acquired AS (
    INSERT INTO {{schema}}.leases AS t (name, owner, generation, acquired_at, renewed_at, expires_at)
    SELECT $1, $2, 1, c.now, c.now, c.now + $3::bigint * interval '1 microsecond' FROM c
    ON CONFLICT (name) DO UPDATE
       SET owner       = EXCLUDED.owner,
           generation  = t.generation + 1,
           acquired_at = EXCLUDED.acquired_at,
           renewed_at  = EXCLUDED.renewed_at,
           expires_at  = EXCLUDED.expires_at
     WHERE t.expires_at <= EXCLUDED.acquired_at
    RETURNING t.name, t.owner, t.generation, t.acquired_at, t.renewed_at, t.expires_at
)
SELECT true, ` + leaseColumns + ` FROM acquired
UNION ALL
SELECT false, ` + leaseColumns + ` FROM {{schema}}.leases
 WHERE name = $1 AND NOT EXISTS (SELECT 1 FROM acquired)`

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
// $1 name, $2 owner, $3 generation.
const leaseReleaseSQL = `
UPDATE {{schema}}.leases
   SET expires_at = least(expires_at, now())
 WHERE name = $1 AND owner = $2 AND generation = $3`

const leaseGetSQL = `SELECT ` + leaseColumns + ` FROM {{schema}}.leases WHERE name = $1`

// leaseFenceSQL runs inside the caller's transaction. FOR SHARE conflicts
// with the row lock a takeover needs, so the takeover waits for the commit;
// FOR KEY SHARE would not, since a takeover does not change the key.
const leaseFenceSQL = `
SELECT 1 FROM {{schema}}.leases
 WHERE name = $1 AND generation = $2 AND expires_at > clock_timestamp()
   FOR SHARE`

const slotColumns = `job, slot, status, owner, lease_name, generation, attempts, started_at, finished_at`

// slotClaimSQL claims one (job, slot) and takes its guarding lease in one
// statement:
//
//   - gate refuses from the snapshot: a slot not yet due by the database
//     clock, a completed slot, one still running under a live lease, or one
//     out of attempts; a refused claim touches nothing.
//   - lease is the acquisition of leaseAcquireSQL: the point where
//     contenders serialise. Its winner is the only one that goes on.
//   - claim inserts the slot, or takes over a failed or interrupted one with
//     attempts + 1. Its WHERE is re-checked on the newest row, so a
//     concurrent completion is never overwritten.
//
// The final SELECT reports all of it in one row; holder is the lease that
// stood in the way, as of the snapshot.
//
// $1 job, $2 slot, $3 lease name, $4 owner, $5 TTL in µs, $6 max attempts,
// $7 pinned now or NULL.
const slotClaimSQL = `
WITH c AS (SELECT coalesce($7::timestamptz, now()) AS now),
prev AS (
    SELECT s.*, coalesce(g.generation = s.generation AND g.expires_at > c.now, false) AS guarded
      FROM {{schema}}.slots s
     CROSS JOIN c
      LEFT JOIN {{schema}}.leases g ON g.name = s.lease_name
     WHERE s.job = $1 AND s.slot = $2
),
gate AS (
    SELECT CASE
             WHEN $2::timestamptz > c.now           THEN 'not_due'
             WHEN p.status = 'completed'            THEN 'completed'
             WHEN p.status = 'running' AND p.guarded THEN 'already_executing'
             WHEN p.attempts >= $6                  THEN 'attempts_exhausted'
           END AS refusal
      FROM c LEFT JOIN prev p ON true
),
lease AS (
    INSERT INTO {{schema}}.leases AS t (name, owner, generation, acquired_at, renewed_at, expires_at)
    SELECT $3, $4, 1, c.now, c.now, c.now + $5::bigint * interval '1 microsecond'
      FROM c, gate
     WHERE gate.refusal IS NULL
    ON CONFLICT (name) DO UPDATE
       SET owner       = EXCLUDED.owner,
           generation  = t.generation + 1,
           acquired_at = EXCLUDED.acquired_at,
           renewed_at  = EXCLUDED.renewed_at,
           expires_at  = EXCLUDED.expires_at
     WHERE t.expires_at <= EXCLUDED.acquired_at
    RETURNING t.name, t.owner, t.generation, t.acquired_at, t.renewed_at, t.expires_at
),
claim AS (
    INSERT INTO {{schema}}.slots AS s (job, slot, status, owner, lease_name, generation, attempts, started_at, finished_at)
    SELECT $1, $2, 'running', l.owner, l.name, l.generation, 1, l.acquired_at, NULL
      FROM lease l
    ON CONFLICT (job, slot) DO UPDATE
       SET status      = 'running',
           owner       = EXCLUDED.owner,
           lease_name  = EXCLUDED.lease_name,
           generation  = EXCLUDED.generation,
           attempts    = s.attempts + 1,
           started_at  = EXCLUDED.started_at,
           finished_at = NULL
     WHERE s.status <> 'completed'
       AND s.attempts < $6
       -- A running slot may be taken over only when its lease is dead. Under
       -- the same lease name that is certain: this statement just took it.
       AND (s.status <> 'running'
            OR s.lease_name = EXCLUDED.lease_name
            OR NOT EXISTS (SELECT 1 FROM {{schema}}.leases g
                            WHERE g.name = s.lease_name AND g.generation = s.generation
                              AND g.expires_at > EXCLUDED.started_at))
    RETURNING s.job, s.slot, s.status, s.owner, s.lease_name, s.generation, s.attempts, s.started_at, s.finished_at
)
SELECT gate.refusal,
       cl.status, cl.owner, cl.lease_name, cl.generation, cl.attempts, cl.started_at,
       p.status, p.owner, p.lease_name, p.generation, p.attempts, p.started_at, p.finished_at,
       l.owner, l.generation, l.acquired_at, l.renewed_at, l.expires_at,
       h.name, h.owner, h.generation, h.acquired_at, h.renewed_at, h.expires_at
  FROM gate
  LEFT JOIN claim cl ON true
  LEFT JOIN prev p ON true
  LEFT JOIN lease l ON true
  LEFT JOIN LATERAL (
      SELECT * FROM {{schema}}.leases
       WHERE name = CASE WHEN p.guarded THEN p.lease_name ELSE $3 END
  ) h ON true`

// slotFinishSQL ends a run in one round trip: slot marked and lease
// released, both only for the claim's owner and generation, and the run row
// written whatever they did.
//
// $1 job, $2 slot, $3 lease name, $4 owner, $5 generation, $6 status,
// $7 pinned now or NULL, $8 manual, $9 catch-up, $10 attempt,
// $11 started_at or NULL, $12 finished_at or NULL, $13 success,
// $14 skipped, $15 reason, $16 error, $17 logs.
const slotFinishSQL = `
WITH c AS (SELECT coalesce($7::timestamptz, now()) AS now),
s AS (
    UPDATE {{schema}}.slots t
       SET status = $6, finished_at = c.now
      FROM c
     WHERE t.job = $1 AND t.slot = $2 AND t.lease_name = $3 AND t.owner = $4
       AND t.generation = $5 AND t.status = 'running'
    RETURNING t.started_at
),
l AS (
    UPDATE {{schema}}.leases t
       SET expires_at = least(t.expires_at, c.now)
      FROM c
     WHERE t.name = $3 AND t.owner = $4 AND t.generation = $5
    RETURNING 1
),
r AS (
    INSERT INTO {{schema}}.runs (job, slot, manual, catch_up, owner, generation, attempt,
                                 started_at, finished_at, success, skipped, reason, error, logs)
    SELECT $1, $2, $8, $9, $4, $5, $10,
           coalesce($11::timestamptz, (SELECT started_at FROM s), c.now),
           coalesce($12::timestamptz, c.now), $13, $14, $15, $16, $17
      FROM c
    RETURNING ` + runColumns + `
)
SELECT EXISTS (SELECT 1 FROM s), EXISTS (SELECT 1 FROM l), r.* FROM r`

const slotGetSQL = `SELECT ` + slotColumns + ` FROM {{schema}}.slots WHERE job = $1 AND slot = $2`

const runColumns = `id, job, slot, manual, catch_up, owner, generation, attempt, started_at, finished_at, success, skipped, reason, error, logs`

// runInsertSQL: $1 job, $2 slot or NULL, $3 manual, $4 catch-up, $5 owner,
// $6 generation, $7 attempt, $8 started_at or NULL, $9 finished_at or NULL,
// $10 success, $11 skipped, $12 reason, $13 error, $14 logs.
const runInsertSQL = `
WITH c AS (SELECT now() AS now)
INSERT INTO {{schema}}.runs (job, slot, manual, catch_up, owner, generation, attempt,
                             started_at, finished_at, success, skipped, reason, error, logs)
SELECT $1, $2, $3, $4, $5, $6, $7, coalesce($8::timestamptz, c.now),
       coalesce($9::timestamptz, $8::timestamptz, c.now), $10, $11, $12, $13, $14
  FROM c
RETURNING ` + runColumns

// runListSQL: $1 job or ” for all, $2 before id or 0, $3 limit.
const runListSQL = `
SELECT ` + runColumns + ` FROM {{schema}}.runs
 WHERE ($1 = '' OR job = $1) AND ($2 = 0 OR id < $2)
 ORDER BY id DESC
 LIMIT $3`

// pruneSQL keeps each job's latest claim whatever its age: it is the record
// that the slot already ran, so a monthly job with a month-long catch-up
// window is not run again by a deploy on the 10th. Likewise each job's
// latest run stays for "last run" displays.
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
)
SELECT (SELECT count(*) FROM ds), (SELECT count(*) FROM dr)`
