package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/cronfence/cronfence/store"
)

const slotColumns = `job, slot, status, owner, lease_name, generation, attempts, started_at, finished_at`

func scanSlot(row interface{ Scan(...any) error }) (store.Slot, error) {
	var (
		sl            store.Slot
		slot, started int64
		finished      sql.NullInt64
		status        string
	)
	if err := row.Scan(&sl.Job, &slot, &status, &sl.Owner, &sl.LeaseName, &sl.Generation, &sl.Attempts, &started, &finished); err != nil {
		return store.Slot{}, err
	}
	sl.Slot, sl.Status, sl.StartedAt, sl.FinishedAt = fromMicros(slot), store.SlotStatus(status), fromMicros(started), fromNullMicros(finished)
	return sl, nil
}

func getSlot(ctx context.Context, q querier, job string, slot time.Time) (store.Slot, error) {
	return scanSlot(q.QueryRowContext(ctx,
		`SELECT `+slotColumns+` FROM cronfence_slots WHERE job = ? AND slot = ?`, job, micros(slot)))
}

// SlotClaim claims (p.Job, p.Slot) under the lease p.LeaseName; see
// store.Store for the rules. Every step runs in one immediate transaction,
// which excludes every other writer of the file until it commits: the race
// the interface allows for, a concurrent finisher completing the slot
// between our read of it and our taking the lease, cannot happen here, so
// SlotClaim never has to give a lease back.
func (s *Store) SlotClaim(ctx context.Context, p store.SlotClaimParams) (res store.SlotClaimResult, err error) {
	if err := p.Validate(); err != nil {
		return store.SlotClaimResult{}, err
	}
	if s.closed.Load() {
		return store.SlotClaimResult{}, closedError("claim slot")
	}
	now, slot := clock(p.Now), normalize(p.Slot)
	err = s.inTx(ctx, func(tx *sql.Tx) (err error) {
		res, err = claimSlot(ctx, tx, p, slot, now)
		return err
	})
	if err != nil {
		return store.SlotClaimResult{}, s.errorf(err, "claim slot %s of job %q", slot.Format(time.RFC3339Nano), p.Job)
	}
	return res, nil
}

func claimSlot(ctx context.Context, tx *sql.Tx, p store.SlotClaimParams, slot, now time.Time) (store.SlotClaimResult, error) {
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
	if found {
		if existing.Status == store.SlotCompleted {
			return refuse(store.ClaimCompleted, store.Lease{})
		}
		if existing.Status == store.SlotRunning {
			// The run is alive while the exact holding that claimed it is.
			guard, err := scanLease(tx.QueryRowContext(ctx,
				`SELECT `+leaseColumns+` FROM cronfence_leases WHERE name = ? AND generation = ? AND expires_at > ?`,
				existing.LeaseName, existing.Generation, micros(now)))
			if err == nil {
				return refuse(store.ClaimHeld, guard)
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return store.SlotClaimResult{}, err
			}
		}
		if existing.Attempts >= p.MaxAttempts {
			return refuse(store.ClaimAttemptsExhausted, store.Lease{})
		}
	}

	lease, acquired, err := acquireLease(ctx, tx, p.LeaseName, p.Owner, p.TTL, now)
	if err != nil {
		return store.SlotClaimResult{}, err
	}
	if !acquired {
		return refuse(store.ClaimHeld, lease)
	}

	// A new claim starts at attempt 1; a failed or interrupted one is taken
	// over with one more attempt. The completed case was refused above.
	claimed, err := scanSlot(tx.QueryRowContext(ctx, `
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
		RETURNING `+slotColumns,
		p.Job, micros(slot), p.Owner, p.LeaseName, lease.Generation, micros(now),
	))
	if err != nil {
		return store.SlotClaimResult{}, err
	}
	return store.SlotClaimResult{Claimed: true, Slot: claimed, Lease: lease}, nil
}

// SlotFinish marks the claim p.Status, releases its lease and writes the run
// row, in one immediate transaction. The first two are conditioned on the
// claim's owner and generation; the run row is written whatever they did,
// since it records what happened.
func (s *Store) SlotFinish(ctx context.Context, p store.SlotFinishParams) (res store.SlotFinishResult, err error) {
	if err := p.Validate(); err != nil {
		return store.SlotFinishResult{}, err
	}
	now, slot := clock(p.Now), normalize(p.Slot)
	run := p.Run
	run.Job, run.Slot, run.Owner, run.Generation = p.Job, slot, p.Owner, p.Generation
	if err := run.Validate(); err != nil {
		return store.SlotFinishResult{}, err
	}
	if s.closed.Load() {
		return store.SlotFinishResult{}, closedError("finish slot")
	}
	run = run.Bounded()

	err = s.inTx(ctx, func(tx *sql.Tx) error {
		// RETURNING started_at gives the run row its default start: the
		// start of this very claim, known only when the claim is still ours.
		var started int64
		err := tx.QueryRowContext(ctx, `
			UPDATE cronfence_slots SET status = ?1, finished_at = ?2
			WHERE job = ?3 AND slot = ?4 AND owner = ?5 AND lease_name = ?6 AND generation = ?7
			  AND status = 'running'
			RETURNING started_at`,
			string(p.Status), micros(now), p.Job, micros(slot), p.Owner, p.LeaseName, p.Generation,
		).Scan(&started)
		switch {
		case err == nil:
			res.SlotUpdated = true
			if run.StartedAt.IsZero() {
				run.StartedAt = fromMicros(started)
			}
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		res.LeaseReleased, err = releaseLease(ctx, tx, store.LeaseRef{Name: p.LeaseName, Owner: p.Owner, Generation: p.Generation}, now)
		if err != nil {
			return err
		}
		if run.FinishedAt.IsZero() {
			run.FinishedAt = now // the slot's finish, whatever the start
		}
		res.Run, err = insertRun(ctx, tx, run, now)
		return err
	})
	if err != nil {
		return store.SlotFinishResult{}, s.errorf(err, "finish slot %s of job %q", slot.Format(time.RFC3339Nano), p.Job)
	}
	return res, nil
}

// SlotGet returns the claim of (job, slot) or store.ErrNotFound.
func (s *Store) SlotGet(ctx context.Context, job string, slot time.Time) (store.Slot, error) {
	if err := store.ValidateName("job", job); err != nil {
		return store.Slot{}, err
	}
	if s.closed.Load() {
		return store.Slot{}, closedError("get slot")
	}
	slot = normalize(slot)
	if err := s.checkSchema(ctx, s.db); err != nil {
		return store.Slot{}, s.errorf(err, "get slot of job %q", job)
	}
	sl, err := getSlot(ctx, s.db, job, slot)
	if err != nil {
		return store.Slot{}, s.errorf(err, "get slot %s of job %q", slot.Format(time.RFC3339Nano), job)
	}
	return sl, nil
}
