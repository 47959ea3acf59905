package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/cronfence/cronfence/store"
)

// SlotClaim claims one (job, slot) and takes its guarding lease in one
// statement. See store.Store and slotClaimSQL.
func (s *Store) SlotClaim(ctx context.Context, p store.SlotClaimParams) (store.SlotClaimResult, error) {
	if err := p.Validate(); err != nil {
		return store.SlotClaimResult{}, err
	}
	if err := s.usable(); err != nil {
		return store.SlotClaimResult{}, err
	}
	slot := slotTime(p.Slot)
	var (
		refusal       *string
		claim, prev   nullSlot
		lease, holder nullLease
	)
	err := s.pool.QueryRow(ctx, s.q.slotClaim, p.Job, slot, p.LeaseName, p.Owner, micros(p.TTL), p.MaxAttempts, nowArg(p.Now)).Scan(
		&refusal,
		&claim.status, &claim.owner, &claim.leaseName, &claim.generation, &claim.attempts, &claim.startedAt,
		&prev.status, &prev.owner, &prev.leaseName, &prev.generation, &prev.attempts, &prev.startedAt, &prev.finishedAt,
		&lease.owner, &lease.generation, &lease.acquiredAt, &lease.renewedAt, &lease.expiresAt,
		&holder.name, &holder.owner, &holder.generation, &holder.acquiredAt, &holder.renewedAt, &holder.expiresAt,
	)
	if err != nil {
		return store.SlotClaimResult{}, s.translate(fmt.Sprintf("claim slot %s of job %q", slot.Format(time.RFC3339Nano), p.Job), err)
	}
	lease.name = &p.LeaseName

	switch {
	case claim.status != nil:
		return store.SlotClaimResult{
			Claimed: true,
			Slot:    claim.slot(p.Job, slot),
			Lease:   lease.lease(),
		}, nil
	case refusal != nil:
		r := store.SlotClaimResult{Refusal: store.ClaimRefusal(*refusal), Slot: prev.slot(p.Job, slot)}
		if r.Refusal == store.ClaimHeld {
			r.Lease = holder.lease()
		}
		return r, nil
	case lease.generation == nil:
		// The gate let us through but another owner holds the lease.
		return store.SlotClaimResult{Refusal: store.ClaimHeld, Slot: prev.slot(p.Job, slot), Lease: holder.lease()}, nil
	}

	// Rare race: the lease was taken, but between this statement's snapshot
	// and its claim another owner completed the slot (or claimed it under a
	// different lease). Give the lease back and report what stands now.
	taken := lease.lease()
	if _, err := s.LeaseRelease(ctx, taken.Ref()); err != nil {
		return store.SlotClaimResult{}, fmt.Errorf("postgres: claim slot of job %q lost a race and could not release lease %q: %w", p.Job, p.LeaseName, err)
	}
	current, err := s.SlotGet(ctx, p.Job, slot)
	if err != nil {
		return store.SlotClaimResult{}, err
	}
	return refusalFor(current, p.MaxAttempts), nil
}

// refusalFor says why an existing slot row cannot be claimed.
func refusalFor(current store.Slot, maxAttempts int) store.SlotClaimResult {
	r := store.SlotClaimResult{Slot: current}
	switch {
	case current.Status == store.SlotCompleted:
		r.Refusal = store.ClaimCompleted
	case current.Attempts >= maxAttempts && current.Status != store.SlotRunning:
		r.Refusal = store.ClaimAttemptsExhausted
	default:
		r.Refusal = store.ClaimHeld
	}
	return r
}

// SlotFinish ends a claimed run in one round trip. See store.Store.
func (s *Store) SlotFinish(ctx context.Context, p store.SlotFinishParams) (store.SlotFinishResult, error) {
	if err := p.Validate(); err != nil {
		return store.SlotFinishResult{}, err
	}
	run := p.Run
	run.Job, run.Slot, run.Owner, run.Generation = p.Job, slotTime(p.Slot), p.Owner, p.Generation
	if err := run.Validate(); err != nil {
		return store.SlotFinishResult{}, err
	}
	if err := s.usable(); err != nil {
		return store.SlotFinishResult{}, err
	}
	run = run.Bounded()
	var res store.SlotFinishResult
	row := s.pool.QueryRow(ctx, s.q.slotFinish,
		p.Job, run.Slot, p.LeaseName, p.Owner, p.Generation, string(p.Status), nowArg(p.Now),
		run.Manual, run.CatchUp, run.Attempt, nullTime(run.StartedAt), nullTime(run.FinishedAt),
		run.Success, run.Skipped, run.Reason, run.Error, logsArg(run.Logs))
	var sr scannedRun
	if err := row.Scan(append([]any{&res.SlotUpdated, &res.LeaseReleased}, sr.dest()...)...); err != nil {
		return store.SlotFinishResult{}, s.translate(fmt.Sprintf("finish slot of job %q", p.Job), err)
	}
	res.Run = sr.run()
	return res, nil
}

// SlotGet returns the claim of (job, slot).
func (s *Store) SlotGet(ctx context.Context, job string, slot time.Time) (store.Slot, error) {
	if err := store.ValidateName("job", job); err != nil {
		return store.Slot{}, err
	}
	if err := s.usable(); err != nil {
		return store.Slot{}, err
	}
	var (
		sl       store.Slot
		status   string
		finished *time.Time
	)
	err := s.pool.QueryRow(ctx, s.q.slotGet, job, slotTime(slot)).Scan(
		&sl.Job, &sl.Slot, &status, &sl.Owner, &sl.LeaseName, &sl.Generation, &sl.Attempts, &sl.StartedAt, &finished)
	if err != nil {
		return store.Slot{}, s.translate(fmt.Sprintf("get slot %s of job %q", slotTime(slot).Format(time.RFC3339Nano), job), err)
	}
	sl.Status = store.SlotStatus(status)
	sl.Slot, sl.StartedAt = sl.Slot.UTC(), sl.StartedAt.UTC()
	if finished != nil {
		sl.FinishedAt = finished.UTC()
	}
	return sl, nil
}

// nullSlot and nullLease receive the nullable columns of slotClaimSQL.
type nullSlot struct {
	status, owner, leaseName *string
	generation               *int64
	attempts                 *int
	startedAt, finishedAt    *time.Time
}

func (n nullSlot) slot(job string, slot time.Time) store.Slot {
	if n.status == nil {
		return store.Slot{}
	}
	s := store.Slot{Job: job, Slot: slot, Status: store.SlotStatus(*n.status)}
	s.Owner = deref(n.owner)
	s.LeaseName = deref(n.leaseName)
	s.Generation = deref(n.generation)
	s.Attempts = deref(n.attempts)
	s.StartedAt = deref(n.startedAt).UTC()
	if n.finishedAt != nil {
		s.FinishedAt = n.finishedAt.UTC()
	}
	return s
}

type nullLease struct {
	name, owner                      *string
	generation                       *int64
	acquiredAt, renewedAt, expiresAt *time.Time
}

func (n nullLease) lease() store.Lease {
	if n.generation == nil {
		return store.Lease{}
	}
	return store.Lease{
		Name:       deref(n.name),
		Owner:      deref(n.owner),
		Generation: *n.generation,
		AcquiredAt: deref(n.acquiredAt).UTC(),
		RenewedAt:  deref(n.renewedAt).UTC(),
		ExpiresAt:  deref(n.expiresAt).UTC(),
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
