package cronfence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/internal/leasekeeper"
	"github.com/cronfence/cronfence/schedule"
	"github.com/cronfence/cronfence/store"
)

const (
	// DefaultSlotLockAttempts is SlotLock.MaxAttempts when zero: a slot
	// whose run failed is not run again.
	DefaultSlotLockAttempts = 1
	// DefaultEarlyGrace is SlotLock.EarlyGrace when zero.
	DefaultEarlyGrace = 2 * time.Second
)

// earlyRetry is how soon a claim that still came early (not_due: the
// database clock is slower than this process's) is sent again.
const earlyRetry = 100 * time.Millisecond

// SlotLock is one scheduled occurrence to run once across hosts: the slot
// of a schedule that a call to LockSlot is for. Name and Schedule are
// required; every other field has a default.
type SlotLock struct {
	// Name is the job's name, the same on every host. The slot is claimed
	// in the registry the scheduler keeps, as job Name under the lease
	// "job:"+Name: a Scheduler's job of the same name shares its slots,
	// lease, pause override (Scheduler.SetEnabled, cronfence pause) and
	// run history. At most MaxJobNameLength bytes.
	Name string
	// Schedule is a cron spec, as Job.Schedule.
	Schedule string
	// TimeZone is the IANA zone the schedule is read in. Defaults to UTC.
	// "Local" is refused: each machine's local zone may differ.
	TimeZone string
	// TTL is the run's lease TTL, renewed every third while fn runs and
	// until its end is recorded. Defaults to DefaultLeaseTTL (90s).
	TTL time.Duration
	// MaxAttempts bounds how many runs one slot gets across hosts: a run
	// that failed ends its slot failed, and a later call for the same slot
	// runs it again as the next attempt while attempts remain. Defaults to
	// DefaultSlotLockAttempts (1).
	MaxAttempts int
	// EarlyGrace is how far this host's clock may run ahead of the
	// database's. A crontab line starts when the host's clock reaches the
	// slot; by the database clock that may be a moment before it, and the
	// most recent instant would then be the previous slot, completed long
	// ago (when every host runs ahead, the slot they meant would run
	// nowhere). So when the schedule's next instant is at most EarlyGrace
	// after the database's now, that instant is the slot, and LockSlot
	// waits until it is due. Defaults to DefaultEarlyGrace (2s); negative
	// turns it off.
	EarlyGrace time.Duration
	// At, when not zero, picks the slot: the schedule's most recent instant
	// at or before At, instead of now by the database clock (EarlyGrace
	// does not apply). For a caller that knows which occurrence it runs.
	// Whether the slot is due, and every lease, are still judged by the
	// database clock: a slot in its future is refused with
	// store.ClaimNotDue.
	At time.Time
	// Owner identifies this process in the lease, the claim and the run
	// row. It must be unique per process incarnation. Defaults to OwnerID().
	Owner string
	// Logger receives LockSlot's own warnings and the lines fn logs to
	// run.Logger (which also land in the run row). Defaults to
	// slog.Default().
	Logger *slog.Logger
	// Clock drives the lease renewals and the early wait. Defaults to the
	// process clock.
	Clock Clock
}

// SlotLockResult says what LockSlot did with its slot.
type SlotLockResult struct {
	// Slot is the occurrence claimed, in UTC.
	Slot time.Time
	// Ran reports whether fn ran: this call won the slot's claim.
	Ran bool
	// Refusal says why fn did not run: the slot was completed or skipped
	// already, is running under another live holder (or the job's previous
	// run still holds the lease: an overlap), is out of attempts, the job
	// is paused, and so on. Empty when fn ran.
	Refusal store.ClaimRefusal
	// Holder names who has the slot when fn did not run: the owner holding
	// the job's lease (store.ClaimHeld, store.ClaimLeaseBusy), otherwise
	// the owner of the slot's claim: who completed it, recorded it skipped
	// or ran its last attempt. Empty when unknown.
	Holder string
	// Attempt is the attempt fn ran as, 1 for the slot's first; when fn did
	// not run, how many attempts the slot had had.
	Attempt int
	// Generation is the fencing token of the run's lease when fn ran; with
	// a held lease, the holder's.
	Generation int64
	// Status is the slot's status as this call left or found it: after a
	// run, completed or failed as its end was recorded (empty when it
	// could not be, or when the slot was taken over meanwhile); when
	// refused, the status of the slot's claim, empty when it had none.
	Status store.SlotStatus
	// Claim is the store's answer to the claim.
	Claim store.SlotClaimResult
}

// LockSlot runs fn at most once per slot of a schedule across every host
// that calls it with the same Name: a crontab line run by cron on several
// hosts, each calling LockSlot, runs once per slot instead of once per host.
//
// The slot is the schedule's most recent instant at or before now by the
// database clock (store.Store.Now), or the coming one within l.EarlyGrace.
// fn runs only if this call wins the claim of (l.Name, slot) in the slot
// registry the scheduler uses (store.Store.SlotClaim). Otherwise fn does
// not run and the result says why and who has the slot; losing is not an
// error. fn gets the run, whose Fence and Complete guard its writes as a
// scheduled handler's do, and a context cancelled the moment the lease is
// lost or ctx ends.
//
// When fn returns, the slot ends completed, or failed when fn returned an
// error (a later call then runs it again while attempts remain), and a run
// row records it, as the scheduler records its runs: should the store not
// answer, the end is tried again, with the lease renewed meanwhile, until
// it is recorded or ctx ends. A slot fn completed in its own transaction
// (Run.Complete) stays completed whatever fn returns.
//
// The error is fn's (also recorded on the run row), joined with one
// wrapping ErrLeaseLost when the lease was lost while fn ran and the slot
// was taken over before its end was recorded (fn's work must then be
// treated as not done), or when fn failed after losing the lease; and with
// the store's when the end could not be recorded. A function that
// succeeded although its lease expired, with nobody taking the slot over,
// is recorded completed, as the scheduler records it. Bad fields return
// an error wrapping store.ErrInvalidArgument without touching the store.
//
// Without a schedule, Lock guards against overlap only: a fast job run
// again by a host whose timer fires after the first run ended runs twice.
//
// On a store with liveness (PostgreSQL), the call holds the owner's
// liveness lock while it runs, so that should this process die, its lease
// is taken over at once; two calls at once under one owner share no lock,
// and the second's lease waits for its TTL instead.
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

	liveKey := int64(0)
	if lv, ok := s.(store.Liveness); ok && ctx.Err() == nil {
		key, release, err := lv.LivenessHold(ctx, l.Owner)
		if err != nil {
			l.Logger.Warn("cronfence: no liveness lock; should this process die, its lease is taken over only at its TTL",
				"job", l.Name, "owner", l.Owner, "error", err)
		} else {
			liveKey = key
			defer release()
		}
	}

	params := job.claimParams(slot, l.Owner, liveKey, OriginScheduled, 0)
	// Each host's own cron fires the slot: a host whose command failed
	// leaves it to the next one's, while attempts remain (MaxAttempts).
	params.RetryFailed = true
	// Slept to the slot by this host's clock: the store waits the rest of
	// the way by its own (store.MaxClaimWait at most), rather than refuse
	// the claim not_due for the loop below to send it again.
	params.WaitDue = early > 0
	sent := l.Clock.Now()
	claim, err := s.SlotClaim(ctx, params)
	answered := time.Now() // its Wait counts from here, on the monotonic clock
	// Still early by the database clock (it runs slower than this
	// host's): try again for at most another grace.
	for retryUntil := sent.Add(l.EarlyGrace); early > 0 && err == nil && claim.Refusal == store.ClaimNotDue && l.Clock.Now().Before(retryUntil); {
		if err = sleepOn(ctx, l.Clock, earlyRetry); err != nil {
			break
		}
		sent = l.Clock.Now()
		claim, err = s.SlotClaim(ctx, params)
		answered = time.Now()
	}
	if err != nil {
		return res, fmt.Errorf("cronfence: lock slot %s of %q: %w", slot.Format(time.RFC3339), l.Name, err)
	}
	res.Claim = claim
	if !claim.Claimed {
		res.refused(claim)
		if claim.Refusal == store.ClaimAttemptsExhausted && claim.Slot.Status == store.SlotRunning {
			l.abandon(ctx, s, claim.Slot, &res)
		}
		return res, nil
	}
	var startAt time.Time // the claim committed ahead of its slot: fn starts once it is due
	if claim.Wait > 0 {
		startAt = answered.Add(claim.Wait)
	}
	return l.run(ctx, s, job, res, sent, startAt, fn)
}

// abandon ends as failed a slot whose last attempt's run died (its
// process was killed before recording its end): no claim may run it again,
// and no scheduler registers a lock's job to end it, so it would otherwise
// stay running for good. As the scheduler's resume scan does, only once the
// run has been dead for a lease TTL (a live owner that lost its lease
// records its own end first), and once across hosts.
func (l *SlotLock) abandon(ctx context.Context, s store.Store, sl store.Slot, res *SlotLockResult) {
	why := fmt.Sprintf("interrupted on its last attempt (%d of %d): the run by %s at generation %d died without recording its end",
		sl.Attempts, l.MaxAttempts, sl.Owner, sl.Generation)
	ended, err := s.SlotAbandon(ctx, store.SlotAbandonParams{
		Job: sl.Job, Slot: sl.Slot, LeaseName: sl.LeaseName, Owner: sl.Owner, Generation: sl.Generation,
		MaxAttempts: l.MaxAttempts, Grace: l.TTL, Error: why,
		Logs: []string{fmt.Sprintf("Slot %s ended failed by %s: %s; no attempt is left", sl.Slot.UTC().Format(time.RFC3339), l.Owner, why)},
	})
	switch {
	case err != nil:
		l.Logger.Warn("cronfence: could not end a dead slot that has no attempt left", "job", sl.Job, "slot", sl.Slot, "error", err)
	case ended.SlotUpdated:
		l.Logger.Warn("cronfence: slot failed: "+why, "job", sl.Job, "slot", sl.Slot)
		res.Status = store.SlotFailed
	}
}

// Validate checks l's fields as LockSlot does, without touching a store:
// for a caller (the lock command) that refuses bad input before it opens
// the database. The error wraps store.ErrInvalidArgument.
func (l SlotLock) Validate() error {
	_, err := l.prepare()
	return err
}

// prepare validates l and fills in its defaults; the job it returns is
// what the scheduler would register for it (its handler is LockSlot's fn,
// passed apart).
func (l *SlotLock) prepare() (*registered, error) {
	if l.Schedule == "" {
		return nil, errInvalid(fmt.Sprintf("LockSlot %q needs a schedule", l.Name))
	}
	if l.MaxAttempts == 0 {
		l.MaxAttempts = DefaultSlotLockAttempts
	}
	job, err := Job{Name: l.Name, Schedule: l.Schedule, TimeZone: l.TimeZone, Handler: noHandler, LeaseTTL: l.TTL, MaxAttempts: l.MaxAttempts}.prepare()
	if err != nil {
		return nil, err
	}
	l.TTL = job.LeaseTTL
	if l.Owner == "" {
		l.Owner = OwnerID()
	}
	if err := store.ValidateName("owner", l.Owner); err != nil {
		return nil, fmt.Errorf("cronfence: lock slot of %q: %w", l.Name, err)
	}
	if l.EarlyGrace == 0 {
		l.EarlyGrace = DefaultEarlyGrace
	}
	if l.Logger == nil {
		l.Logger = slog.Default()
	}
	if l.Clock == nil {
		l.Clock = clock.Real{}
	}
	return job, nil
}

// slot returns the slot for the instant at (UTC, zero when the schedule
// has none) and, when it is the coming instant (see EarlyGrace), how long
// until it is due.
func (l *SlotLock) slot(sched schedule.Schedule, at time.Time) (time.Time, time.Duration) {
	if l.At.IsZero() && l.EarlyGrace > 0 {
		if next := sched.Next(at); !next.IsZero() && next.Sub(at) <= l.EarlyGrace {
			return next.UTC(), next.Sub(at)
		}
	}
	if prev := sched.Prev(at); !prev.IsZero() {
		return prev.UTC(), 0
	}
	return time.Time{}, 0
}

// refused fills in r from a refused claim.
func (r *SlotLockResult) refused(claim store.SlotClaimResult) {
	r.Refusal = claim.Refusal
	r.Attempt = claim.Slot.Attempts
	r.Status = claim.Slot.Status
	r.Holder = claim.Slot.Owner
	switch {
	case claim.Refusal == store.ClaimHeld || claim.Refusal == store.ClaimLeaseBusy:
		r.Holder, r.Generation = claim.Lease.Owner, claim.Lease.Generation
	case claim.Refusal == store.ClaimPaused && claim.Slot.Status == "":
		r.Status = store.SlotSkipped // settled so by the refusal
	}
	if claim.Recorded != "" {
		r.Status = claim.Recorded
	}
}

// run runs fn under the claimed slot's lease through the scheduler's run
// sequence (runner, finisher) with LockSlot's policy: a run cut short ends
// failed rather than left to resume, and its end is stamped by the store's
// clock.
func (l *SlotLock) run(ctx context.Context, s store.Store, job *registered, res SlotLockResult, sent, startAt time.Time,
	fn func(context.Context, *Run) error) (SlotLockResult, error) {
	lease := res.Claim.Lease
	res.Ran, res.Attempt, res.Generation = true, res.Claim.Slot.Attempts, lease.Generation

	e := &env{cfg: Config{Store: s, Owner: l.Owner, Logger: l.Logger, Clock: l.Clock, StoreTimeout: DefaultStoreTimeout},
		store: s, log: l.Logger}
	e.clock = &dbClock{e: e}
	keeper := leasekeeper.New(s, leasekeeper.Options{Clock: l.Clock})
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
