package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/internal/sqlstore"
)

func getSlot(ctx context.Context, q sqlstore.Querier, job string, slot time.Time) (store.Slot, error) {
	return decode.Slot(q.QueryRowContext(ctx,
		`SELECT `+sqlstore.SlotColumns+` FROM cronfence_slots WHERE job = ? AND slot = ?`, job, micros(slot)))
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

// SlotClaimBatch claims many (job, slot)s in one immediate transaction,
// each item as claimSlot says, and returns the results in the items' order.
// The transaction excludes every other writer of the file until it commits,
// so the race the interface allows for, a concurrent finisher completing a
// slot between the read of it and the taking of its lease, cannot happen
// here, and a claim never has to give a lease back. Items are claimed one
// after another, so a later item sees what an earlier one wrote.
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
		return nil, err
	}
	now := s.now(items[0].Now) // shared by every item
	results := make([]store.SlotClaimResult, len(items))
	at := 0 // the item being claimed, for the error
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for i, p := range items {
			at = i
			r, err := claimSlot(ctx, tx, p, sqlstore.Normalize(p.Slot), now)
			if err != nil {
				return err
			}
			results[i] = r
		}
		return nil
	})
	if err != nil {
		return nil, s.errorf(err, "%s", sqlstore.ClaimWhat(items, at))
	}
	return results, nil
}

// waitDue waits, before the claim's transaction, for the slots the items
// ask to wait for (store.SlotClaimParams.WaitDue). The database clock is
// this process's, so the wait is a timer; a store whose clock is Config's
// NowFunc (a test's, which need not move) does not wait.
func (s *Store) waitDue(ctx context.Context, items []store.SlotClaimParams) error {
	if s.nowFunc != nil {
		return nil
	}
	wait := store.DueWait(items, s.now(time.Time{}))
	if wait <= 0 {
		return nil
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sqlite: claim of %d slot(s): waiting for a slot to come due: %w", len(items), ctx.Err())
	}
}

// claimSlot claims one item inside the caller's immediate transaction, in
// the order of the PostgreSQL store's sql/slotClaim.sql:
//
//  1. The gate refuses, writing nothing but a paused slot's settlement: a
//     slot not yet due by the database clock (not_due); a paused job, by its
//     override or else its declared value (paused, and the slot settled:
//     see settlePaused); a completed or skipped slot (final); a running
//     slot whose guarding lease holding is still live (already_executing,
//     naming that holding); a failed slot, unless the claim retries it
//     (failed); a slot out of attempts.
//  2. The lease is taken as LeaseAcquire takes it.
//  3. Taken: the slot is inserted at attempt 1, or a failed, buffered or
//     interrupted one is taken over with one more attempt.
//  4. Held by another run (an overlap): refused with already_executing
//     naming the holder, and the slot recorded; see recordOverlap.
func claimSlot(ctx context.Context, tx *sql.Tx, p store.SlotClaimParams, slot, now time.Time) (res store.SlotClaimResult, err error) {
	// Each read is its own small statement: preparing a statement is most of
	// what one costs here, and a join of the three costs more than all three.
	existing, err := getSlot(ctx, tx, p.Job, slot)
	found := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return store.SlotClaimResult{}, err
	}
	refuse := func(why store.ClaimRefusal, holder store.Lease) (store.SlotClaimResult, error) {
		return store.SlotClaimResult{Refusal: why, Slot: existing, Lease: holder}, nil
	}

	// By the database clock, so a replica whose own clock runs ahead cannot
	// claim early. Here the two clocks are one unless the caller pinned Now.
	if slot.After(now) {
		return refuse(store.ClaimNotDue, store.Lease{})
	}
	enabled, overridden, unread, err := jobEnabled(ctx, tx, p.Job, slot, !p.DeclaredDisabled)
	if err != nil {
		return store.SlotClaimResult{}, err
	}
	// Whatever the answer, it says whether the declared value decided.
	defer func() { res.PauseStateUnread = unread }()
	if !enabled {
		res, _ := refuse(store.ClaimPaused, store.Lease{})
		if !found {
			if res.SkipRun, err = settlePaused(ctx, tx, p, slot, now, overridden); err != nil {
				return store.SlotClaimResult{}, err
			}
			res.Recorded = store.SlotSkipped
		}
		return res, nil
	}
	if found {
		why, guard, err := sqlstore.Refusal(p, existing, func() (store.Lease, bool, error) {
			// The run is alive while the exact holding that claimed it is.
			guard, err := decode.Lease(tx.QueryRowContext(ctx,
				`SELECT `+sqlstore.LeaseColumns+` FROM cronfence_leases WHERE name = ? AND generation = ? AND expires_at > ?`,
				existing.LeaseName, existing.Generation, micros(now)))
			if errors.Is(err, sql.ErrNoRows) {
				return store.Lease{}, false, nil
			}
			return guard, err == nil, err
		})
		if err != nil {
			return store.SlotClaimResult{}, err
		}
		if why != "" {
			return refuse(why, guard)
		}
	}

	lease, acquired, err := acquireLease(ctx, tx, p.LeaseName, p.Owner, p.TTL, now)
	if err != nil {
		return store.SlotClaimResult{}, err
	}
	if !acquired {
		return recordOverlap(ctx, tx, p, slot, now, existing, found, lease)
	}

	// A new claim starts at attempt 1; a failed, buffered (attempts 0) or
	// interrupted one is taken over with one more attempt. The completed and
	// skipped cases were refused above.
	claimed, err := decode.Slot(tx.QueryRowContext(ctx, `
		INSERT INTO cronfence_slots (job, slot, status, owner, lease_name, generation, attempts, started_at, finished_at)
		VALUES (?1, ?2, 'running', ?3, ?4, ?5, 1, ?6, NULL)
		ON CONFLICT (job, slot) DO UPDATE SET
			status      = 'running',
			owner       = excluded.owner,
			lease_name  = excluded.lease_name,
			generation  = excluded.generation,
			attempts    = cronfence_slots.attempts + 1,
			started_at  = excluded.started_at,
			finished_at = NULL
		RETURNING `+sqlstore.SlotColumns,
		p.Job, micros(slot), p.Owner, p.LeaseName, lease.Generation, micros(now),
	))
	if err != nil {
		return store.SlotClaimResult{}, err
	}
	return store.SlotClaimResult{Claimed: true, Slot: claimed, Lease: lease}, nil
}

// jobEnabled reads the job's override of slot; with none set (no row, or
// NULL, or ended at or before the slot: store.JobState.Override) the
// declared value decides, and overridden is false. When the overrides
// cannot be read at all (their table is missing or damaged: renamed,
// dropped, a column gone), the declared value decides too and unread says
// so: a broken pause table fails open rather than stopping every job. The
// failed read leaves the transaction usable: SQLite fails that statement
// only.
func jobEnabled(ctx context.Context, q sqlstore.Querier, job string, slot time.Time, declared bool) (enabled, overridden, unread bool, err error) {
	var override sql.NullBool
	err = q.QueryRowContext(ctx, `SELECT enabled_override FROM cronfence_job_state WHERE job = ? AND (override_until IS NULL OR ? < override_until)`,
		job, micros(slot)).Scan(&override)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return declared, false, false, nil
	case isMissingSchema(err):
		return declared, false, true, nil
	case err != nil:
		return false, false, false, err
	case override.Valid:
		return override.Bool, true, false, nil
	}
	return declared, false, false, nil
}

// isMissingSchema reports a statement refused because a table or column it
// names does not exist. SQLite reports both as its generic SQLITE_ERROR,
// told apart by the message.
func isMissingSchema(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "no such table") || strings.Contains(msg, "no such column")
}

// settlePaused records a due slot of a paused job, which has no row yet, as
// skipped (owned by p.Owner at generation 0, attempts 0), so it is final: a
// claim that arrives after the resume (from a replica whose clock runs
// behind, a not_due retry, a catch-up) is refused skipped instead of running
// a slot that came due during the pause. The skip is recorded as a run row
// with reason paused, as an overlap's is, so the slot's history says why
// nothing ran; overridden says whether the pause is an override or the
// job's declared value. It returns that row. The caller holds the write
// lock and has found no row: the insert cannot conflict.
func settlePaused(ctx context.Context, tx *sql.Tx, p store.SlotClaimParams, slot, now time.Time, overridden bool) (store.Run, error) {
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO cronfence_slots (job, slot, status, owner, lease_name, generation, attempts, started_at, finished_at)
		VALUES (?, ?, 'skipped', ?, ?, 0, 0, ?, ?)`,
		p.Job, micros(slot), p.Owner, p.LeaseName, micros(now), micros(now),
	); err != nil {
		return store.Run{}, err
	}
	return insertRun(ctx, tx, sqlstore.PausedSkipRun(p, slot, now, overridden), now)
}

// recordOverlap answers a claim whose gate passed but whose lease is held by
// another run (the previous slot's, or a manual one): refused with
// already_executing, naming holder. A slot with no row yet is recorded, by
// exactly one replica since the transaction holds the write lock and the
// insert does nothing on conflict: buffered when it may be
// (sqlstore.MayBuffer) and the job has no buffered slot yet, otherwise
// skipped, with a skip run row naming the holder. Both are owned by p.Owner
// at generation 0, attempts 0.
// A slot that has a row (failed, buffered, interrupted) is left as it is,
// and so is one whose claim waits for the holder (store.OverlapWait).
func recordOverlap(ctx context.Context, tx *sql.Tx, p store.SlotClaimParams, slot, now time.Time,
	existing store.Slot, found bool, holder store.Lease) (store.SlotClaimResult, error) {
	res := store.SlotClaimResult{Refusal: store.ClaimHeld, Slot: existing, Lease: holder}
	if found || p.Overlap == store.OverlapWait {
		return res, nil
	}
	status := store.SlotSkipped
	if sqlstore.MayBuffer(p, slot, holder) {
		var buffered bool
		if err := tx.QueryRowContext(ctx,
			`SELECT EXISTS (SELECT 1 FROM cronfence_slots WHERE job = ? AND status = 'buffered')`, p.Job,
		).Scan(&buffered); err != nil {
			return store.SlotClaimResult{}, err
		}
		if !buffered {
			status = store.SlotBuffered
		}
	}
	var finished sql.NullInt64
	if status == store.SlotSkipped {
		finished = nullMicros(now) // final at once
	}
	marked, err := tx.ExecContext(ctx, `
		INSERT INTO cronfence_slots (job, slot, status, owner, lease_name, generation, attempts, started_at, finished_at)
		VALUES (?, ?, ?, ?, ?, 0, 0, ?, ?)
		ON CONFLICT (job, slot) DO NOTHING`,
		p.Job, micros(slot), string(status), p.Owner, p.LeaseName, micros(now), finished,
	)
	if err != nil {
		return store.SlotClaimResult{}, err
	}
	if n, err := marked.RowsAffected(); err != nil || n == 0 {
		return res, err
	}
	res.Recorded = status
	if status != store.SlotSkipped {
		return res, nil
	}
	res.SkipRun, err = insertRun(ctx, tx, sqlstore.OverlapSkipRun(p, slot, now, holder), now)
	if err != nil {
		return store.SlotClaimResult{}, err
	}
	return res, nil
}

// SlotFinish marks the claim p.Status, releases its lease and writes the run
// row, in one immediate transaction. The first two are conditioned on the
// claim's owner and generation; the run row is written whatever they did,
// since it records what happened, but when the slot was not marked (taken
// over) it says so: success false, the takeover prefixed to its error. A
// zero p.Slot is a manual run: there is no slot to mark, and the run row
// has no slot. The result names the job's earliest buffered slot, read in
// the same transaction.
func (s *Store) SlotFinish(ctx context.Context, p store.SlotFinishParams) (store.SlotFinishResult, error) {
	run, slot, err := s.finishArgs(p)
	if err != nil {
		return store.SlotFinishResult{}, err
	}
	var res store.SlotFinishResult
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		res, err = finishIn(ctx, tx, p, run, slot, s.now(p.Now))
		return err
	})
	if err != nil {
		return store.SlotFinishResult{}, s.errorf(err, "%s", sqlstore.FinishWhat(p.Job, slot))
	}
	return res, nil
}

// SlotFinishBatch ends many runs in one immediate transaction, each as
// SlotFinish would. See store.Store.
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
	results := make([]store.SlotFinishResult, len(items))
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for i, p := range items {
			var err error
			if results[i], err = finishIn(ctx, tx, p, runs[i], slots[i], s.now(p.Now)); err != nil {
				return fmt.Errorf("item %d: %w", i, err)
			}
		}
		return nil
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

// finishIn is one finish inside tx, at now.
func finishIn(ctx context.Context, tx *sql.Tx, p store.SlotFinishParams, run store.Run, slot, now time.Time) (store.SlotFinishResult, error) {
	var (
		res     store.SlotFinishResult
		started time.Time
	)
	if !slot.IsZero() {
		// RETURNING started_at gives the run row its default start: the
		// start of this very claim, known only when the claim is still
		// ours.
		// A slot this holding completed already (in the handler's
		// transaction, or by this finish retried after its answer was
		// lost) stays completed, with its finish time. A failed one is
		// not taken for this holding's: SlotAbandon may have ended it.
		// Status running leaves a running slot running (for a resume)
		// and unfinished.
		var status string
		err := tx.QueryRowContext(ctx, `
			UPDATE cronfence_slots
			   SET status = CASE WHEN status = 'running' THEN ?1 ELSE status END,
			       finished_at = CASE WHEN status = 'running' AND ?1 = 'running' THEN NULL ELSE coalesce(finished_at, ?2) END,
			       retry_until = CASE WHEN status = 'running' AND ?1 = 'failed' THEN ?8 END
			WHERE job = ?3 AND slot = ?4 AND owner = ?5 AND lease_name = ?6 AND generation = ?7
			  AND status IN ('running', 'completed')
			RETURNING started_at, status`,
			string(p.Status), micros(now), p.Job, micros(slot), p.Owner, p.LeaseName, p.Generation, nullMicros(p.RetryUntil),
		).Scan(decode.Instant(&started), &status)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return res, err
		}
		res.SlotUpdated, res.SlotStatus = err == nil, store.SlotStatus(status)
	}
	run = sqlstore.FinishedRun(p, run, res, started, now)
	var err error
	res.LeaseReleased, err = releaseLease(ctx, tx, store.LeaseRef{Name: p.LeaseName, Owner: p.Owner, Generation: p.Generation}, now)
	if err != nil {
		return res, err
	}
	if res.Run, err = finishRun(ctx, tx, run, now); err != nil {
		return res, err
	}
	res.Buffered, err = earliestBuffered(ctx, tx, p.Job)
	return res, err
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
	sl, err := getSlot(ctx, s.db, job, slot)
	if err != nil {
		return store.Slot{}, s.errorf(err, "get slot %s of job %q", slot.Format(time.RFC3339Nano), job)
	}
	return sl, nil
}

// SlotListInterrupted returns running slots whose lease expired or was
// taken over, and failed slots open to a retry. SQLite has no liveness: a
// dead owner's run counts as interrupted once its lease expires. See
// store.Store.
func (s *Store) SlotListInterrupted(ctx context.Context) ([]store.Slot, error) {
	if s.closed.Load() {
		return nil, closedError("list interrupted slots")
	}
	if err := s.checkSchema(ctx, s.db); err != nil {
		return nil, s.errorf(err, "list interrupted slots")
	}
	slots, err := sqlstore.Query(ctx, s.db, decode.Slot, `
		SELECT `+sqlstore.Prefixed("s.", sqlstore.SlotColumns)+`
		  FROM cronfence_slots s
		  LEFT JOIN cronfence_leases l ON l.name = s.lease_name
		 WHERE s.status = 'running'
		   AND (l.name IS NULL OR l.generation <> s.generation OR l.expires_at <= ?1)
		UNION ALL
		SELECT `+sqlstore.Prefixed("s.", sqlstore.SlotColumns)+`
		  FROM cronfence_slots s
		 WHERE s.status = 'failed' AND s.retry_until IS NOT NULL AND s.retry_until > ?1
		 ORDER BY 2`, micros(s.now(time.Time{})))
	if err != nil {
		return nil, s.errorf(err, "list interrupted slots")
	}
	return slots, nil
}

// SlotAbandon ends a dead slot that has no attempt left as failed. See
// store.Store.
func (s *Store) SlotAbandon(ctx context.Context, p store.SlotAbandonParams) (res store.SlotFinishResult, err error) {
	if err := p.Validate(); err != nil {
		return store.SlotFinishResult{}, err
	}
	if s.closed.Load() {
		return store.SlotFinishResult{}, closedError("abandon slot")
	}
	now, slot := s.now(p.Now), sqlstore.Normalize(p.Slot)
	p.Slot = slot
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		// Dead as SlotListInterrupted has it, for Grace: the claim's
		// generation expired, or a later one took the lease, before
		// now - Grace.
		var attempts int
		var started time.Time
		err := tx.QueryRowContext(ctx, `
			UPDATE cronfence_slots SET status = 'failed', finished_at = ?1
			WHERE job = ?2 AND slot = ?3 AND lease_name = ?4 AND owner = ?5 AND generation = ?6
			  AND status = 'running' AND attempts >= ?7
			  AND NOT EXISTS (SELECT 1 FROM cronfence_leases l
			                   WHERE l.name = ?4
			                     AND CASE WHEN l.generation = ?6 THEN l.expires_at ELSE l.acquired_at END > ?8)
			RETURNING attempts, started_at`,
			micros(now), p.Job, micros(slot), p.LeaseName, p.Owner, p.Generation, p.MaxAttempts, micros(now.Add(-p.Grace)),
		).Scan(&attempts, decode.Instant(&started))
		if errors.Is(err, sql.ErrNoRows) {
			return nil // alive again, finished, or attempts left: not ours to end
		}
		if err != nil {
			return err
		}
		res.SlotUpdated = true
		lease, err := leaseRow(ctx, tx, p.LeaseName)
		if err != nil {
			return err
		}
		_, how, ended := store.DeadHolding(p.Generation, lease, false, now)
		if res.Run, err = insertRun(ctx, tx, p.Run(attempts, started, how, ended), now); err != nil {
			return err
		}
		res.Buffered, err = earliestBuffered(ctx, tx, p.Job)
		return err
	})
	if err != nil {
		return store.SlotFinishResult{}, s.errorf(err, "abandon slot %s of job %q", slot.Format(time.RFC3339Nano), p.Job)
	}
	return res, nil
}

// earliestBuffered is the job's earliest buffered slot, waiting for the
// run that is ending; zero when none.
func earliestBuffered(ctx context.Context, q sqlstore.Querier, job string) (time.Time, error) {
	var buffered time.Time
	err := q.QueryRowContext(ctx, `SELECT min(slot) FROM cronfence_slots WHERE job = ? AND status = 'buffered'`, job).Scan(decode.Instant(&buffered))
	return buffered, err
}

// leaseRow is the named lease's row, or a zero Lease when it has none.
func leaseRow(ctx context.Context, q sqlstore.Querier, name string) (store.Lease, error) {
	l, err := getLease(ctx, q, name)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Lease{}, nil
	}
	return l, err
}
