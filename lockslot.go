package cronfence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/internal/leasekeeper"
	"github.com/cronfence/cronfence/store"
)

// earlyRetry is how soon a claim that still came early (not_due: the
// database clock is slower than this process's) is sent again.
const earlyRetry = 100 * time.Millisecond

// LockSlot runs fn at most once per slot of a schedule across every host
// that calls it with the same Name: a crontab line run by cron on several
// hosts runs once per slot instead of once per host (docs/lock.md).
//
// The slot is the schedule's most recent instant at or before now by the
// database clock, or the coming one within l.EarlyGrace. fn runs only if
// this call wins the claim of (l.Name, slot) in the scheduler's slot
// registry; otherwise the result says why and who has the slot, and losing
// is no error. fn gets the run, whose Fence and Complete guard its writes
// as a scheduled handler's do, and a context cancelled the moment the
// lease is lost or ctx ends. Its end is recorded as the scheduler records
// its runs' (runner.go, finish.go), with one difference: a run cut short
// ends failed, for the next call to run again while attempts remain,
// rather than left running for a replica to resume.
//
// The error is fn's, joined with one wrapping ErrLeaseLost when the slot
// was taken over before the end was recorded (fn's work must be treated as
// not done) or fn failed after losing the lease, and with the store's when
// the end could not be recorded. Bad fields return an error wrapping
// store.ErrInvalidArgument without touching the store. On a store with
// liveness the call holds the owner's liveness lock while it runs, so
// should this process die its lease is taken over at once.
func LockSlot(ctx context.Context, s store.Store, l SlotLock, fn func(ctx context.Context, run *Run) error) (SlotLockResult, error) {
	switch {
	case s == nil:
		return SlotLockResult{}, errInvalid("LockSlot needs a store, got nil")
	case fn == nil:
		return SlotLockResult{}, errInvalid(fmt.Sprintf("LockSlot %q needs a function to run, got nil", l.Name))
	}
	job, err := l.prepare()
	if err != nil {
		return SlotLockResult{}, err
	}
	at := l.At
	if at.IsZero() {
		if at, err = s.Now(ctx); err != nil {
			return SlotLockResult{}, fmt.Errorf("cronfence: lock slot of %q: reading the database clock: %w", l.Name, err)
		}
	}
	slot, early := l.slot(job.sched, at)
	if slot.IsZero() {
		return SlotLockResult{}, errInvalid(fmt.Sprintf("lock slot of %q: schedule %q has no slot at or before %s", l.Name, l.Schedule, at.UTC().Format(time.RFC3339)))
	}
	res := SlotLockResult{Slot: slot}
	if early > 0 {
		// This host's cron fired early by the database clock: wait for
		// the slot it meant.
		if err := sleepOn(ctx, l.Clock, early); err != nil {
			return res, fmt.Errorf("cronfence: lock slot %s of %q: %w", slot.Format(time.RFC3339), l.Name, err)
		}
	}

	liveKey, release := l.holdLiveness(ctx, s)
	defer release()
	claim, sent, answered, err := l.claim(ctx, s, job.claimParams(slot, l.Owner, liveKey, OriginScheduled, 0), early > 0)
	if err != nil {
		return res, fmt.Errorf("cronfence: lock slot %s of %q: %w", slot.Format(time.RFC3339), l.Name, err)
	}
	res.Claim = claim
	e := newEnv(Config{Store: s, Owner: l.Owner, Logger: l.Logger, Clock: l.Clock, StoreTimeout: DefaultStoreTimeout})
	e.Log = l.Logger // as given: LockSlot's lines name no owner of their own
	if !claim.Claimed {
		res.refused(claim)
		// A slot whose last attempt died: no scheduler registers a lock's
		// job to end it, so the next call does.
		if claim.Refusal == store.ClaimAttemptsExhausted && claim.Slot.Status == store.SlotRunning {
			if _, ok := abandonDead(ctx, e, job, claim.Slot); ok {
				res.Status = store.SlotFailed
			}
		}
		return res, nil
	}
	var startAt time.Time // the claim committed ahead of its slot: fn starts once it is due
	if claim.Wait > 0 {
		startAt = answered.Add(claim.Wait)
	}
	return l.run(ctx, e, job, res, sent, startAt, fn)
}

// holdLiveness holds the owner's liveness lock, on a store that keeps
// them, while the call runs: should this process die, its lease is taken
// over at once rather than at its TTL.
func (l *SlotLock) holdLiveness(ctx context.Context, s store.Store) (key int64, release func()) {
	lv, ok := s.(store.Liveness)
	if !ok || ctx.Err() != nil {
		return 0, func() {}
	}
	key, release, err := lv.LivenessHold(ctx, l.Owner)
	if err != nil {
		l.Logger.Warn("cronfence: no liveness lock; should this process die, its lease is taken over only at its TTL",
			"job", l.Name, "owner", l.Owner, "error", err)
		return 0, func() {}
	}
	return key, release
}

// claim claims the slot, sent when this host's clock reached it (early:
// LockSlot slept to it) and answered when the store answered (monotonic,
// as the claim's Wait counts).
func (l *SlotLock) claim(ctx context.Context, s store.Store, params store.SlotClaimParams, early bool) (claim store.SlotClaimResult, sent, answered time.Time, err error) {
	// Each host's own cron fires the slot: a host whose command failed
	// leaves it to the next one's, while attempts remain.
	params.RetryFailed = true
	// Slept to the slot by this host's clock, the store waits the rest of
	// the way by its own rather than refuse the claim not_due.
	params.WaitDue = early
	sent = l.Clock.Now()
	claim, err = s.SlotClaim(ctx, params)
	answered = time.Now()
	// Still early by the database clock (it runs slower than this host's):
	// try again for at most another grace.
	for retryUntil := sent.Add(l.EarlyGrace); early && err == nil && claim.Refusal == store.ClaimNotDue && l.Clock.Now().Before(retryUntil); {
		if err = sleepOn(ctx, l.Clock, earlyRetry); err != nil {
			break
		}
		sent = l.Clock.Now()
		claim, err = s.SlotClaim(ctx, params)
		answered = time.Now()
	}
	return claim, sent, answered, err
}

// run runs fn under the claimed slot's lease through the scheduler's run
// sequence (runner, finisher) with LockSlot's policy: a run cut short ends
// failed rather than left to resume, and its end is stamped by the store's
// clock.
func (l *SlotLock) run(ctx context.Context, e *env, job *registered, res SlotLockResult, sent, startAt time.Time,
	fn func(context.Context, *Run) error) (SlotLockResult, error) {
	lease := res.Claim.Lease
	res.Ran, res.Attempt, res.Generation = true, res.Claim.Slot.Attempts, lease.Generation

	keeper := leasekeeper.New(e.Store, leasekeeper.Options{Clock: l.Clock})
	defer keeper.Close()
	r := &runner{e: e, keeper: keeper, ctx: ctx,
		finish: &finisher{e: e, stop: ctx.Done()}}
	job.Handler = fn
	end := r.execute(runSpec{job: job, slot: res.Slot, lease: lease, attempt: res.Attempt, origin: OriginScheduled, sent: sent, startAt: startAt})

	runErr := end.err
	switch {
	case end.recordErr != nil:
		return res, errors.Join(runErr, fmt.Errorf("cronfence: lock slot %s of %q: the end of the run was not recorded: %w",
			res.Slot.Format(time.RFC3339), l.Name, end.recordErr))
	case end.takenOver:
		lost := end.lost
		switch {
		case lost == nil:
			lost = fmt.Errorf("cronfence: lock slot %s of %q: taken over before the run's end was recorded: %w",
				res.Slot.Format(time.RFC3339), l.Name, ErrLeaseLost)
			fallthrough
		case !errors.Is(runErr, lost):
			runErr = errors.Join(runErr, lost)
		}
		return res, runErr
	}
	// fn may have completed the slot in its own transaction before it
	// failed (Run.Complete, a command's complete()): then it stayed
	// completed, as the finish tells.
	res.Status = end.slotStatus
	return res, runErr
}

// noHandler stands for LockSlot's fn in the job prepare validates: the
// function is passed apart, per call.
func noHandler(context.Context, *Run) error { return nil }

// sleepOn waits d on clk, or until ctx ends.
func sleepOn(ctx context.Context, clk clock.Clock, d time.Duration) error {
	timer := clk.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C():
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
