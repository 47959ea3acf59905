package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/internal/sqlstore"
)

func (s *Store) getSlot(ctx context.Context, q sqlstore.Querier, job string, slot time.Time) (store.Slot, error) {
	return decode.Slot(q.QueryRowContext(ctx, `SELECT `+sqlstore.SlotColumns+` FROM `+s.t("slots")+` WHERE job = ? AND slot = ?`, job, slot))
}

// SlotClaim claims (p.Job, p.Slot) under the lease p.LeaseName: a batch of
// one. See SlotClaimBatch and store.Store for the rules.
func (s *Store) SlotClaim(ctx context.Context, p store.SlotClaimParams) (store.SlotClaimResult, error) {
	res, err := s.SlotClaimBatch(ctx, []store.SlotClaimParams{p})
	if err != nil {
		return store.SlotClaimResult{}, err
	}
	return res[0], nil
}

// slotKey names one (job, slot) row.
type slotKey struct {
	job  string
	slot int64 // Unix microseconds
}

func keyOf(job string, slot time.Time) slotKey { return slotKey{job, slot.UnixMicro()} }

// SlotClaimBatch claims many (job, slot)s in one transaction, each item as
// claimSlot says, and returns the results in the items' order. It is not
// one statement, as on PostgreSQL: MySQL has no data-modifying WITH and no
// RETURNING on UPDATE. It is a short transaction with row locks instead:
//
//  1. One query of several statements locks the items' lease rows FOR
//     UPDATE, in name order, then reads the database clock, the items'
//     slot rows and the jobs' pause overrides (readForClaim). Every claim
//     of a job's lease waits at the lock for the one before it to commit,
//     and under READ COMMITTED then reads what that one wrote: from there
//     on, the transaction is the lease's only writer, as SQLite's write
//     lock makes a claim there.
//  2. Each item is decided as on the other stores. The writes of the items
//     taken (lease and slot) are sent claimWritesMax items a query
//     (claimWrites); an overlap is recorded as it is met.
//
// Round trips: BEGIN, the reads, the writes, COMMIT: 4 for a claim of one
// slot that wins, 3 for one refused, 13 for a batch of 1,000 taken. A
// lease whose row did not exist yet has nothing to lock; a slot another
// writer recorded without the lease (a skip, a paused slot's settlement)
// may appear meanwhile. Both are found by the write (a duplicate key, or
// no row matched), and the transaction runs again (errRaced).
//
// A lease row locked by a handler's fenced transaction (its deposed
// writer is frozen or cut off while the lease expired) makes the lock wait
// Config.LockWait, then fail; the batch then claims item by item
// (claimAlone), and the item whose lease could not be locked is refused
// lease_busy, writing nothing, as on PostgreSQL.
func (s *Store) SlotClaimBatch(ctx context.Context, items []store.SlotClaimParams) ([]store.SlotClaimResult, error) {
	if err := store.ValidateClaimBatch(items); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, closedError("claim slot")
	}
	if len(items) == 0 {
		return nil, nil
	}
	if err := s.waitDue(ctx, items); err != nil {
		return nil, s.claimError(err, items, -1)
	}
	results := make([]store.SlotClaimResult, len(items))
	err := s.inTx(ctx, func(tx *sql.Tx) error { return s.claimIn(ctx, tx, items, results) })
	if mysqlCode(err) == errLockWait {
		for i := range items {
			if results[i], err = s.claimAlone(ctx, items[i]); err != nil {
				return nil, s.claimError(err, items, i)
			}
		}
		return results, nil
	}
	if err != nil {
		return nil, s.claimError(err, items, -1)
	}
	return results, nil
}

// waitDue waits, before the claim's transaction takes any lock, for the
// slots the items ask to wait for (store.SlotClaimParams.WaitDue): SLEEP,
// by the database clock, until the latest of them that is due within
// store.MaxClaimWait. One round trip, made only by a claim that has such
// items; none with a pinned clock or Config.NowFunc.
func (s *Store) waitDue(ctx context.Context, items []store.SlotClaimParams) error {
	if s.nowFunc != nil {
		return nil
	}
	var slots []any
	seen := map[time.Time]bool{}
	for _, p := range items {
		if slot := sqlstore.Normalize(p.Slot); p.WaitDue && p.Now.IsZero() && !seen[slot] {
			seen[slot] = true
			slots = append(slots, slot)
		}
	}
	if len(slots) == 0 {
		return nil
	}
	list := "SELECT CAST(? AS DATETIME(6)) AS slot" + strings.Repeat(" UNION ALL SELECT CAST(? AS DATETIME(6))", len(slots)-1)
	_, err := s.own.ExecContext(ctx, `DO SLEEP(COALESCE((
	    SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), MAX(w.slot)) / 1000000
	      FROM (`+list+`) w
	     WHERE w.slot > UTC_TIMESTAMP(6) AND w.slot <= UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND), 0))`,
		append(slots, store.MaxClaimWait.Microseconds())...)
	return err
}

func (s *Store) claimError(err error, items []store.SlotClaimParams, at int) error {
	var item itemError
	if errors.As(err, &item) {
		at, err = item.index, item.err
	}
	return s.errorf(err, "%s", sqlstore.ClaimWhat(items, at))
}

// itemError names the item of a batch whose statement failed.
type itemError struct {
	index int
	err   error
}

func (e itemError) Error() string { return e.err.Error() }
func (e itemError) Unwrap() error { return e.err }

// claimAlone claims one item in a transaction of its own, for a batch
// whose lock waited too long. When its own lease row cannot be locked
// within Config.LockWait, it answers from the row as last committed: held
// by another run (already_executing, naming the holder, nothing recorded:
// the overlap is recorded by a claim that can lock the row), or free by
// the clock but locked, its deposed writer still inside a fenced
// transaction (lease_busy, naming that writer's lease).
func (s *Store) claimAlone(ctx context.Context, p store.SlotClaimParams) (store.SlotClaimResult, error) {
	results := make([]store.SlotClaimResult, 1)
	err := s.inTx(ctx, func(tx *sql.Tx) error { return s.claimIn(ctx, tx, []store.SlotClaimParams{p}, results) })
	if mysqlCode(err) != errLockWait {
		return results[0], err
	}
	slot := sqlstore.Normalize(p.Slot)
	existing, err := s.getSlot(ctx, s.db, p.Job, slot)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return store.SlotClaimResult{}, err
	}
	cur, err := scanLockedLease(s.db.QueryRowContext(ctx, s.leaseRowSQL(), p.LeaseName))
	if err != nil {
		return store.SlotClaimResult{}, err
	}
	now, err := s.now(ctx, s.db, p.Now)
	if err != nil {
		return store.SlotClaimResult{}, err
	}
	if cur.heldAgainst(p.Owner, now) {
		return store.SlotClaimResult{Refusal: store.ClaimHeld, Slot: existing, Lease: cur.Lease}, nil
	}
	return store.SlotClaimResult{Refusal: store.ClaimLeaseBusy, Slot: existing, Lease: cur.Lease}, nil
}

// claimIn is one run of a claim batch's transaction; see SlotClaimBatch.
func (s *Store) claimIn(ctx context.Context, tx *sql.Tx, items []store.SlotClaimParams, results []store.SlotClaimResult) error {
	r, err := s.readForClaim(ctx, tx, items, true)
	if isMissingSchema(err) {
		// The pause overrides cannot be read (their table is missing or
		// damaged): the declared values decide, and each result says so.
		// A broken pause table fails open rather than stopping every job.
		// MySQL failed that statement only; the locks stay taken.
		r, err = s.readForClaim(ctx, tx, items, false)
		r.unread = true
	}
	if err != nil {
		return err
	}
	now := r.now
	if !items[0].Now.IsZero() || s.nowFunc != nil {
		if now, err = s.now(ctx, tx, items[0].Now); err != nil { // pinned: no round trip
			return err
		}
	}
	var w claimWrites
	for i, p := range items {
		slot := sqlstore.Normalize(p.Slot)
		existing, found := r.slots[keyOf(p.Job, slot)]
		enabled := !p.DeclaredDisabled
		o, overridden := r.overrides[p.Job]
		if overridden = overridden && (o.until.IsZero() || slot.Before(o.until)); overridden {
			enabled = o.enabled // an override that ended at or before the slot decides no more
		}
		cur, leaseFound := r.leases[p.LeaseName]
		c := claim{p: p, slot: slot, now: now, existing: existing, found: found, enabled: enabled, overridden: overridden,
			lease: cur, leaseFound: leaseFound}
		res, err := s.claimSlot(ctx, tx, c, &w)
		if err != nil {
			return itemError{i, err}
		}
		res.PauseStateUnread = r.unread
		results[i] = res
		if w.items == claimWritesMax {
			if err := w.flush(ctx, tx); err != nil {
				return err
			}
		}
	}
	return w.flush(ctx, tx)
}

// claimWritesMax is how many claimed items' writes go in one query.
const claimWritesMax = 100

// claimWrites collects the writes of the items a claim batch takes (each
// its lease, its slot and the rows that matched) to send them together,
// claimWritesMax items a round trip.
type claimWrites struct {
	query strings.Builder
	args  []any
	items int
}

func (w *claimWrites) add(query string, args ...any) {
	if w.query.Len() > 0 {
		w.query.WriteString("; ")
	}
	w.query.WriteString(query)
	w.args = append(w.args, args...)
}

// flush sends the writes collected. Each item's slot write must match one
// row: a row changed since the read (abandoned by a replica, which does
// not lock the lease) matches nothing, and a row inserted since (a skip),
// or a lease row (one that had none to lock), is a duplicate; either way
// the transaction runs again (errRaced) and reads it.
func (w *claimWrites) flush(ctx context.Context, tx *sql.Tx) error {
	if w.items == 0 {
		return nil
	}
	sets := 0
	err := resultSets(ctx, tx, w.query.String(), w.args, func(_ int, rows *sql.Rows) error {
		sets++
		var matched int64
		if err := rows.Scan(&matched); err != nil {
			return err
		}
		if matched != 1 {
			return errRaced
		}
		return nil
	})
	switch {
	case mysqlCode(err) == errDupKey:
		return errRaced
	case err != nil:
		return err
	case sets != w.items:
		return fmt.Errorf("claim writes: %d answers for %d items", sets, w.items)
	}
	w.query.Reset()
	w.args, w.items = w.args[:0], 0
	return nil
}

// claimReads is what a claim batch reads before it decides.
type claimReads struct {
	leases    map[string]lockedLease // the items' lease rows, locked
	now       time.Time              // the database clock, after the locks
	slots     map[slotKey]store.Slot // the items' slot rows
	overrides map[string]override    // the jobs' pause overrides that are set
	unread    bool                   // the overrides could not be read
}

// readForClaim sends, in one round trip (several statements, one result
// set each), what a claim batch reads: it locks the items' lease rows FOR
// UPDATE in name order (every transaction of the store locks lease rows in
// name order and before slot rows, so two of them do not deadlock over
// them; under READ COMMITTED the rows read are the newest committed, so a
// claim that waited for another's lock sees the lease that one took), then
// reads the clock, the items' slot rows by key and, with overrides, the
// jobs' pause overrides. A handler's fenced transaction holds its lease
// row in share mode; the lock waits for it at most Config.LockWait and
// then fails with errLockWait.
func (s *Store) readForClaim(ctx context.Context, tx *sql.Tx, items []store.SlotClaimParams, overrides bool) (claimReads, error) {
	names := make([]string, len(items))
	for i, p := range items {
		names[i] = p.LeaseName
	}
	sort.Strings(names)
	var args []any
	for _, n := range names {
		args = append(args, n)
	}
	// The slots by key through a join on the keys listed: a row-value IN
	// list is planned as ranges too, but MariaDB then compares every row
	// found with every item (650 ms for 1,000 items, against 7 ms so).
	query := s.lockLeasesSQL(len(names)) + `; SELECT UTC_TIMESTAMP(6); SELECT ` + sqlstore.Prefixed("s.", sqlstore.SlotColumns) +
		` FROM (SELECT ? AS job, ? AS slot` + strings.Repeat(" UNION ALL SELECT ?, ?", len(items)-1) + `) k
		  JOIN ` + s.t("slots") + ` s ON s.job = k.job AND s.slot = k.slot`
	for _, p := range items {
		args = append(args, p.Job, sqlstore.Normalize(p.Slot))
	}
	if overrides {
		query += `; SELECT job, enabled_override, override_until FROM ` + s.t("job_state") + ` WHERE job IN (` + placeholders(len(items)) +
			`) AND enabled_override IS NOT NULL`
		for _, p := range items {
			args = append(args, p.Job)
		}
	}
	r := claimReads{leases: map[string]lockedLease{}, slots: map[slotKey]store.Slot{}, overrides: map[string]override{}}
	err := resultSets(ctx, tx, query, args, func(set int, rows *sql.Rows) error {
		switch set {
		case 0:
			l, err := scanLockedLease(rows)
			r.leases[l.Name] = l
			return err
		case 1:
			return rows.Scan(decode.Instant(&r.now))
		case 2:
			sl, err := decode.Slot(rows)
			r.slots[keyOf(sl.Job, sl.Slot)] = sl
			return err
		default:
			var job string
			var o override
			err := rows.Scan(&job, &o.enabled, decode.Instant(&o.until))
			r.overrides[job] = o
			return err
		}
	})
	return r, err
}

// override is a job's pause override as a claim reads it: enabled until
// until (zero: until changed; store.JobState.Override).
type override struct {
	enabled bool
	until   time.Time
}

// resultSets sends query, several statements, and calls row for each row
// of each result set, numbered from 0 (statements without one, such as an
// UPDATE, are passed over by the driver). A statement that fails fails the
// call; those before it have run.
func resultSets(ctx context.Context, q sqlstore.Querier, query string, args []any, row func(set int, rows *sql.Rows) error) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for set := 0; ; set++ {
		for rows.Next() {
			if err := row(set, rows); err != nil {
				return err
			}
		}
		if !rows.NextResultSet() {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return rows.Close()
}

// claim is one item of a claim batch with what the transaction read for it.
type claim struct {
	p          store.SlotClaimParams
	slot, now  time.Time
	existing   store.Slot
	found      bool // existing is the slot's row
	enabled    bool // by the override, else the declared value
	overridden bool // the override decided enabled
	lease      lockedLease
	leaseFound bool // lease is p.LeaseName's row, locked
}

// claimSlot decides and writes one item, in the order of the PostgreSQL
// store's sql/slotClaim.sql:
//
//  1. The gate refuses, writing nothing but a paused slot's settlement: a
//     slot not yet due by the database clock (not_due); a paused job
//     (paused, and the slot settled); a completed or skipped slot (final);
//     a running slot whose guarding lease holding is still live
//     (already_executing, naming that holding); a failed slot, unless the
//     claim retries it (failed); a slot out of attempts.
//  2. The lease is taken as LeaseAcquire takes it.
//  3. Taken: the slot is inserted at attempt 1, or a failed, buffered or
//     interrupted one is taken over with one more attempt.
//  4. Held by another run (an overlap): refused with already_executing
//     naming the holder, and the slot recorded; see recordOverlap.
func (s *Store) claimSlot(ctx context.Context, tx *sql.Tx, c claim, w *claimWrites) (store.SlotClaimResult, error) {
	p := c.p
	refuse := func(why store.ClaimRefusal, holder store.Lease) (store.SlotClaimResult, error) {
		return store.SlotClaimResult{Refusal: why, Slot: c.existing, Lease: holder}, nil
	}
	if c.slot.After(c.now) {
		return refuse(store.ClaimNotDue, store.Lease{})
	}
	if !c.enabled {
		res, _ := refuse(store.ClaimPaused, store.Lease{})
		if c.found {
			return res, nil
		}
		// Settled skipped, and the skip recorded as a run row.
		if err := s.insertSlot(ctx, tx, store.Slot{Job: p.Job, Slot: c.slot, Status: store.SlotSkipped, Owner: p.Owner,
			LeaseName: p.LeaseName, StartedAt: c.now, FinishedAt: c.now}); err != nil {
			return store.SlotClaimResult{}, err
		}
		var err error
		res.SkipRun, err = s.insertRun(ctx, tx, sqlstore.PausedSkipRun(p, c.slot, c.now, c.overridden), c.now)
		if err != nil {
			return store.SlotClaimResult{}, err
		}
		res.Recorded = store.SlotSkipped
		return res, nil
	}
	if c.found {
		why, guard, err := sqlstore.Refusal(p, c.existing, func() (store.Lease, bool, error) { return s.guard(ctx, tx, c) })
		if err != nil {
			return store.SlotClaimResult{}, err
		}
		if why != "" {
			return refuse(why, guard)
		}
	}

	take, acquired := s.planTake(c.lease, c.leaseFound, p.LeaseName, p.Owner, p.TTL, s.liveKeyArg(p.LiveKey), c.now)
	if !acquired {
		return s.recordOverlap(ctx, tx, c, take.lease)
	}
	lease := take.lease
	claimed := store.Slot{Job: p.Job, Slot: c.slot, Status: store.SlotRunning, Owner: p.Owner, LeaseName: p.LeaseName,
		Generation: lease.Generation, Attempts: 1, StartedAt: c.now}
	// The lease and the slot are written with the batch's other claimed
	// items (see claimWrites): the lease taken, then the slot inserted (a
	// new one) or taken over with one more attempt (a failed, buffered or
	// interrupted one) as it was read, then how many rows that matched.
	w.add(take.sql, take.args...)
	if !c.found {
		w.add(`INSERT INTO `+s.t("slots")+` (`+sqlstore.SlotColumns+`) VALUES (?, ?, 'running', ?, ?, ?, 1, ?, NULL)`,
			p.Job, c.slot, claimed.Owner, claimed.LeaseName, claimed.Generation, claimed.StartedAt)
	} else {
		claimed.Attempts = c.existing.Attempts + 1
		w.add(`UPDATE `+s.t("slots")+`
		   SET owner = ?, lease_name = ?, generation = ?, attempts = ?, started_at = ?, finished_at = NULL, status = 'running'
		 WHERE job = ? AND slot = ? AND status = ? AND attempts = ? AND generation = ?`,
			claimed.Owner, claimed.LeaseName, claimed.Generation, claimed.Attempts, claimed.StartedAt,
			p.Job, c.slot, string(c.existing.Status), c.existing.Attempts, c.existing.Generation)
	}
	w.add(`SELECT ROW_COUNT()`)
	w.items++
	return store.SlotClaimResult{Claimed: true, Slot: claimed, Lease: lease}, nil
}

// guard reads the lease holding that guards a running slot, and whether
// it is live: that generation, unexpired, its owner's process not gone.
// Under the claim's own lease name it is the row locked already.
func (s *Store) guard(ctx context.Context, tx *sql.Tx, c claim) (store.Lease, bool, error) {
	g, found := c.lease, c.leaseFound
	if c.existing.LeaseName != c.p.LeaseName {
		var err error
		g, err = scanLockedLease(tx.QueryRowContext(ctx, s.leaseRowSQL(), c.existing.LeaseName))
		found = err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return store.Lease{}, false, err
		}
	}
	live := found && g.Generation == c.existing.Generation && g.ExpiresAt.After(c.now) && !g.ownerGone
	return g.Lease, live, nil
}

// insertSlot inserts a slot's first row. A row another writer inserted
// since the claim read the slot (a skip, a paused slot's settlement, a
// claim under a lease that had no row to lock) is a race: errRaced.
func (s *Store) insertSlot(ctx context.Context, tx *sql.Tx, sl store.Slot) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO `+s.t("slots")+` (`+sqlstore.SlotColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		sl.Job, sl.Slot, string(sl.Status), sl.Owner, sl.LeaseName, sl.Generation, sl.Attempts, sl.StartedAt, nullTime(sl.FinishedAt))
	if mysqlCode(err) == errDupKey {
		return errRaced
	}
	return err
}

// recordOverlap answers a claim whose gate passed but whose lease is held by
// another run (the previous slot's, or a manual one): refused with
// already_executing, naming holder. A slot with no row yet is recorded,
// once, since the transaction holds the lease row: buffered when it may be
// (sqlstore.MayBuffer) and the job has no buffered slot yet, otherwise
// skipped, with a skip run row naming the holder. A slot that has a row is
// left as it is, and so is one whose claim waits for the holder
// (store.OverlapWait).
func (s *Store) recordOverlap(ctx context.Context, tx *sql.Tx, c claim, holder store.Lease) (store.SlotClaimResult, error) {
	p := c.p
	res := store.SlotClaimResult{Refusal: store.ClaimHeld, Slot: c.existing, Lease: holder}
	if c.found || p.Overlap == store.OverlapWait {
		return res, nil
	}
	status := store.SlotSkipped
	if sqlstore.MayBuffer(p, c.slot, holder) {
		var buffered bool
		if err := tx.QueryRowContext(ctx,
			`SELECT EXISTS (SELECT 1 FROM `+s.t("slots")+` WHERE job = ? AND status = 'buffered')`, p.Job,
		).Scan(&buffered); err != nil {
			return store.SlotClaimResult{}, err
		}
		if !buffered {
			status = store.SlotBuffered
		}
	}
	marked := store.Slot{Job: p.Job, Slot: c.slot, Status: status, Owner: p.Owner, LeaseName: p.LeaseName, StartedAt: c.now}
	if status == store.SlotSkipped {
		marked.FinishedAt = c.now // final at once
	}
	if err := s.insertSlot(ctx, tx, marked); err != nil {
		return store.SlotClaimResult{}, err
	}
	res.Recorded = status
	if status != store.SlotSkipped {
		return res, nil
	}
	var err error
	res.SkipRun, err = s.insertRun(ctx, tx, sqlstore.OverlapSkipRun(p, c.slot, c.now, holder), c.now)
	if err != nil {
		return store.SlotClaimResult{}, err
	}
	return res, nil
}

// SlotFinish marks the claim p.Status, releases its lease and writes the run
// row, in one transaction of five round trips; see store.Store and
// finishAll.
func (s *Store) SlotFinish(ctx context.Context, p store.SlotFinishParams) (store.SlotFinishResult, error) {
	run, slot, err := s.finishArgs(p)
	if err != nil {
		return store.SlotFinishResult{}, err
	}
	results := make([]store.SlotFinishResult, 1)
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		now, err := s.now(ctx, tx, p.Now)
		if err != nil {
			return err
		}
		results[0] = store.SlotFinishResult{}
		runs := []store.Run{run}
		return s.finishAll(ctx, tx, []store.SlotFinishParams{p}, runs, []time.Time{slot}, []time.Time{now}, []int{0}, results)
	})
	if err != nil {
		return store.SlotFinishResult{}, s.errorf(err, "%s", sqlstore.FinishWhat(p.Job, slot))
	}
	return results[0], nil
}

// SlotFinishBatch ends many runs in one transaction, each as SlotFinish
// would, in lease-name order (the lock order of every transaction of the
// store). See store.Store.
func (s *Store) SlotFinishBatch(ctx context.Context, items []store.SlotFinishParams) ([]store.SlotFinishResult, error) {
	if err := store.ValidateFinishBatch(items); err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, nil
	}
	runs := make([]store.Run, len(items))
	slots := make([]time.Time, len(items))
	for i, p := range items {
		var err error
		if runs[i], slots[i], err = s.finishArgs(p); err != nil {
			return nil, fmt.Errorf("item %d (job %q): %w", i, p.Job, err)
		}
	}
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return items[order[a]].LeaseName < items[order[b]].LeaseName })
	results := make([]store.SlotFinishResult, len(items))
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var now time.Time // read once, when an item needs the database clock
		at := make([]time.Time, len(items))
		for i, p := range items {
			at[i] = sqlstore.Normalize(p.Now)
			if at[i].IsZero() {
				if now.IsZero() {
					var err error
					if now, err = s.now(ctx, tx, time.Time{}); err != nil {
						return err
					}
				}
				at[i] = now
			}
			results[i] = store.SlotFinishResult{}
		}
		// A run of the transaction's loop starts from the runs as given.
		fresh := append([]store.Run(nil), runs...)
		return s.finishAll(ctx, tx, items, fresh, slots, at, order, results)
	})
	if err != nil {
		return nil, s.errorf(err, "%s", sqlstore.FinishWhat(items[0].Job, slots[0]))
	}
	return results, nil
}

// finishArgs checks a finish and returns its run row and slot as written
// (sqlstore.FinishArgs).
func (s *Store) finishArgs(p store.SlotFinishParams) (store.Run, time.Time, error) {
	run, slot, err := sqlstore.FinishArgs(p)
	if err == nil && s.closed.Load() {
		err = closedError("finish slot")
	}
	return run, slot, err
}

// finishChunk is how many runs' ends go in one query of a finish batch.
const finishChunk = 100

// finishAll ends the runs items[i] for i in order (lease-name order, the
// lock order of every transaction of the store), each at at[i], inside
// tx, setting results[i]; see SlotFinish. A chunk of finishChunk items
// costs two round trips: the leases released, then the slots marked and
// read back; then the run rows written, each with the job's buffered slot.
func (s *Store) finishAll(ctx context.Context, tx *sql.Tx, items []store.SlotFinishParams, runs []store.Run, slots, at []time.Time,
	order []int, results []store.SlotFinishResult) error {
	for start := 0; start < len(order); start += finishChunk {
		if err := s.finishSome(ctx, tx, items, runs, slots, at, order[start:min(start+finishChunk, len(order))], results); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) finishSome(ctx context.Context, tx *sql.Tx, items []store.SlotFinishParams, runs []store.Run, slots, at []time.Time,
	chunk []int, results []store.SlotFinishResult) error {
	var (
		q    strings.Builder
		args []any
		// sets[k] is the item whose answer the k-th result set is, and
		// whether it is the slot's (true) or the lease's.
		sets []struct {
			item int
			slot bool
		}
		started = make(map[int]time.Time, len(chunk)) // of the claims of the slots marked
	)
	add := func(query string, a ...any) {
		if q.Len() > 0 {
			q.WriteString("; ")
		}
		q.WriteString(query)
		args = append(args, a...)
	}
	for _, i := range chunk {
		p := items[i]
		add(`UPDATE `+s.t("leases")+` SET expires_at = LEAST(expires_at, ?) WHERE name = ? AND owner = ? AND generation = ?`,
			at[i], p.LeaseName, p.Owner, p.Generation)
		add(`SELECT ROW_COUNT()`)
		sets = append(sets, struct {
			item int
			slot bool
		}{i, false})
	}
	for _, i := range chunk {
		p := items[i]
		if slots[i].IsZero() {
			continue // a manual run: no slot to mark
		}
		// A slot this holding completed already stays completed, with
		// its finish time. A failed one is not taken for this holding's:
		// SlotAbandon may have ended it. Status running leaves a running
		// slot running (for a resume) and unfinished. MySQL assigns left
		// to right, each assignment seeing the ones before it: status,
		// which the others read, goes last.
		add(`UPDATE `+s.t("slots")+`
			   SET finished_at = CASE WHEN status = 'running' AND ? = 'running' THEN NULL ELSE COALESCE(finished_at, ?) END,
			       retry_until = CASE WHEN status = 'running' AND ? = 'failed' THEN ? END,
			       status      = CASE WHEN status = 'running' THEN ? ELSE status END
			 WHERE job = ? AND slot = ? AND owner = ? AND lease_name = ? AND generation = ?
			   AND status IN ('running', 'completed')`,
			string(p.Status), at[i], string(p.Status), nullTime(p.RetryUntil), string(p.Status),
			p.Job, slots[i], p.Owner, p.LeaseName, p.Generation)
		add(`SELECT ROW_COUNT(), started_at, status FROM `+s.t("slots")+` WHERE job = ? AND slot = ?`, p.Job, slots[i])
		sets = append(sets, struct {
			item int
			slot bool
		}{i, true})
	}
	err := resultSets(ctx, tx, q.String(), args, func(set int, rows *sql.Rows) error {
		i := sets[set].item
		if !sets[set].slot {
			var released int64
			err := rows.Scan(&released)
			results[i].LeaseReleased = released > 0
			return err
		}
		var (
			matched int64
			claimed time.Time
			status  string
		)
		if err := rows.Scan(&matched, decode.Instant(&claimed), &status); err != nil {
			return err
		}
		if matched > 0 {
			results[i].SlotUpdated, results[i].SlotStatus, started[i] = true, store.SlotStatus(status), claimed
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, i := range chunk {
		runs[i] = sqlstore.FinishedRun(items[i], runs[i], results[i], started[i], at[i])
	}
	return s.writeRuns(ctx, tx, runs, at, chunk, results)
}

// writeRuns writes the run rows runs[i] for i in chunk, each with the
// job's buffered slot, in one round trip, into results[i]. A holding that
// has its row already (a finish retried after its answer was lost, or a
// replica recorded it interrupted) fails the query at its insert; the
// chunk is then written item by item, each such holding's row returned as
// it is or replaced (finishRunBuffered).
func (s *Store) writeRuns(ctx context.Context, tx *sql.Tx, runs []store.Run, at []time.Time, chunk []int, results []store.SlotFinishResult) error {
	var (
		q     strings.Builder
		args  []any
		ready = make([]store.Run, len(chunk))
	)
	for k, i := range chunk {
		run, logs, err := sqlstore.RunRow(runs[i], at[i])
		if err != nil {
			return err
		}
		ready[k] = run
		if q.Len() > 0 {
			q.WriteString("; ")
		}
		q.WriteString(insertRunSQL(s) + `; SELECT LAST_INSERT_ID(), (SELECT min(slot) FROM ` + s.t("slots") + ` WHERE job = ? AND status = 'buffered')`)
		args = append(args, run.Job, nullTime(run.Slot), run.Manual, run.CatchUp, run.Owner, run.Generation, run.LeaseName, run.Attempt,
			run.StartedAt, run.FinishedAt, run.Success, run.Skipped, run.Reason, run.Error, logs, run.Job)
	}
	err := resultSets(ctx, tx, q.String(), args, func(set int, rows *sql.Rows) error {
		i := chunk[set]
		if err := rows.Scan(&ready[set].ID, decode.Instant(&results[i].Buffered)); err != nil {
			return err
		}
		results[i].Run = ready[set]
		return nil
	})
	if mysqlCode(err) != errDupKey {
		return err
	}
	for _, i := range chunk {
		var err error
		if results[i].Run, results[i].Buffered, err = s.finishRunBuffered(ctx, tx, runs[i], at[i]); err != nil {
			return err
		}
	}
	return nil
}

// SlotGet returns the claim of (job, slot) or store.ErrNotFound.
func (s *Store) SlotGet(ctx context.Context, job string, slot time.Time) (store.Slot, error) {
	if err := store.ValidateName("job", job); err != nil {
		return store.Slot{}, err
	}
	if s.closed.Load() {
		return store.Slot{}, closedError("get slot")
	}
	slot = sqlstore.Normalize(slot)
	if err := s.checkSchema(ctx, s.db); err != nil {
		return store.Slot{}, s.errorf(err, "get slot of job %q", job)
	}
	sl, err := s.getSlot(ctx, s.db, job, slot)
	if err != nil {
		return store.Slot{}, s.errorf(err, "get slot %s of job %q", slot.Format(time.RFC3339Nano), job)
	}
	return sl, nil
}

// SlotListInterrupted returns running slots whose lease expired, was taken
// over or whose owner's process is gone, and failed slots open to a retry.
// See store.Store.
func (s *Store) SlotListInterrupted(ctx context.Context) ([]store.Slot, error) {
	if s.closed.Load() {
		return nil, closedError("list interrupted slots")
	}
	if err := s.checkSchema(ctx, s.db); err != nil {
		return nil, s.errorf(err, "list interrupted slots")
	}
	now := s.nowArg(time.Time{})
	cols := sqlstore.Prefixed("s.", sqlstore.SlotColumns)
	slots, err := sqlstore.Query(ctx, s.db, decode.Slot, `
		SELECT * FROM (
			SELECT `+cols+`
			  FROM `+s.t("slots")+` s
			  LEFT JOIN `+s.t("leases")+` l ON l.name = s.lease_name
			 WHERE s.status = 'running'
			   AND (l.name IS NULL OR l.generation <> s.generation OR l.expires_at <= COALESCE(?, UTC_TIMESTAMP(6))
			        OR (l.live_key IS NOT NULL AND IS_FREE_LOCK(CONCAT('cronfence.live.', l.live_key)) = 1))
			UNION ALL
			SELECT `+cols+`
			  FROM `+s.t("slots")+` s
			 WHERE s.status = 'failed' AND s.retry_until IS NOT NULL AND s.retry_until > COALESCE(?, UTC_TIMESTAMP(6))
		) found ORDER BY slot`, now, now)
	if err != nil {
		return nil, s.errorf(err, "list interrupted slots")
	}
	return slots, nil
}

// SlotAbandon ends a dead slot that has no attempt left as failed. See
// store.Store. It reads the lease row without locking it and locks only the
// slot row, as on PostgreSQL.
func (s *Store) SlotAbandon(ctx context.Context, p store.SlotAbandonParams) (res store.SlotFinishResult, err error) {
	if err := p.Validate(); err != nil {
		return store.SlotFinishResult{}, err
	}
	if s.closed.Load() {
		return store.SlotFinishResult{}, closedError("abandon slot")
	}
	slot := sqlstore.Normalize(p.Slot)
	p.Slot = slot
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		res = store.SlotFinishResult{}
		now, err := s.now(ctx, tx, p.Now)
		if err != nil {
			return err
		}
		// Dead for Grace: the claim's generation expired before
		// now - Grace or its owner's process is gone, or a later one took
		// the lease before now - Grace.
		cutoff := sqlstore.Normalize(now.Add(-p.Grace))
		up, err := tx.ExecContext(ctx, `UPDATE `+s.t("slots")+` SET finished_at = ?, status = 'failed'
			WHERE job = ? AND slot = ? AND lease_name = ? AND owner = ? AND generation = ?
			  AND status = 'running' AND attempts >= ?
			  AND NOT EXISTS (SELECT 1 FROM `+s.t("leases")+` l
			                   WHERE l.name = ?
			                     AND CASE WHEN l.generation = ?
			                              THEN l.expires_at > ? AND NOT (l.live_key IS NOT NULL AND IS_FREE_LOCK(CONCAT('cronfence.live.', l.live_key)) = 1)
			                              ELSE l.acquired_at > ? END)`,
			now, p.Job, slot, p.LeaseName, p.Owner, p.Generation, p.MaxAttempts, p.LeaseName, p.Generation, cutoff, cutoff)
		if err != nil {
			return err
		}
		if n, err := up.RowsAffected(); err != nil || n == 0 {
			return err // alive again, finished, or attempts left: not ours to end
		}
		var attempts int
		var started time.Time
		if err := tx.QueryRowContext(ctx, `SELECT attempts, started_at FROM `+s.t("slots")+` WHERE job = ? AND slot = ?`,
			p.Job, slot).Scan(&attempts, decode.Instant(&started)); err != nil {
			return err
		}
		res.SlotUpdated = true
		how, ended, err := s.deadHow(ctx, tx, p.LeaseName, p.Generation, now)
		if err != nil {
			return err
		}
		res.Run, res.Buffered, err = s.insertRunBuffered(ctx, tx, p.Run(attempts, started, how, ended), now)
		return err
	})
	if err != nil {
		return store.SlotFinishResult{}, s.errorf(err, "abandon slot %s of job %q", slot.Format(time.RFC3339Nano), p.Job)
	}
	return res, nil
}

// earliestBuffered is the job's earliest buffered slot, waiting for the
// run that is ending; zero when none.
func (s *Store) earliestBuffered(ctx context.Context, q sqlstore.Querier, job string) (time.Time, error) {
	var buffered time.Time
	err := q.QueryRowContext(ctx, `SELECT min(slot) FROM `+s.t("slots")+` WHERE job = ? AND status = 'buffered'`, job).Scan(decode.Instant(&buffered))
	return buffered, err
}

// deadHow says how the holding (name, generation), dead, was found so
// (store.DeadHolding), and the end its interrupted run row gets.
func (s *Store) deadHow(ctx context.Context, tx *sql.Tx, name string, generation int64, now time.Time) (string, time.Time, error) {
	var lease store.Lease
	var gone bool
	err := tx.QueryRowContext(ctx, `
		SELECT name, generation, expires_at,
		       COALESCE(live_key IS NOT NULL AND IS_FREE_LOCK(CONCAT('cronfence.live.', live_key)) = 1, FALSE)
		  FROM `+s.t("leases")+` WHERE name = ?`, name).Scan(&lease.Name, &lease.Generation, decode.Instant(&lease.ExpiresAt), &gone)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", time.Time{}, err
	}
	_, how, ended := store.DeadHolding(generation, lease, gone, now)
	return how, ended, nil
}
