package cronfence

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/cronfence/cronfence/internal/clock"
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

// SlotLock is one scheduled occurrence to run once across hosts: the slot
// of a schedule that a call to LockSlot is for. Name and Schedule are
// required; every other field has a default.
type SlotLock struct {
	// Name is the job's name, the same on every host, at most
	// MaxJobNameLength bytes. The slot is claimed as job Name under the
	// lease "job:"+Name: a Scheduler's job of that name shares its slots,
	// lease, pause override and run history.
	Name     string
	Schedule string // a cron spec, as Job.Schedule
	// TimeZone is the IANA zone the schedule is read in. Defaults to UTC;
	// "Local" is refused (each machine's may differ).
	TimeZone string
	// TTL is the run's lease TTL, renewed every third while fn runs and
	// until its end is recorded. Defaults to DefaultLeaseTTL (90s).
	TTL time.Duration
	// MaxAttempts bounds the runs one slot gets across hosts: a failed run
	// ends its slot failed, and a later call runs it again while attempts
	// remain. Defaults to DefaultSlotLockAttempts (1).
	MaxAttempts int
	// EarlyGrace is how far this host's clock may run ahead of the
	// database's: a crontab line that starts a moment before its slot by
	// the database clock would otherwise take the previous slot, completed
	// long ago. When the schedule's next instant is at most EarlyGrace
	// after the database's now, that instant is the slot, and LockSlot
	// waits for it. Defaults to DefaultEarlyGrace (2s); negative: off.
	EarlyGrace time.Duration
	// At, when not zero, picks the slot: the schedule's most recent instant
	// at or before At, instead of now by the database clock (EarlyGrace
	// does not apply). A slot in the database's future is still refused
	// store.ClaimNotDue.
	At time.Time
	// Owner identifies this process, unique per process incarnation.
	// Defaults to OwnerID().
	Owner string
	// Logger receives LockSlot's warnings and the lines fn logs to
	// run.Logger (also kept in the run row). Defaults to slog.Default().
	Logger *slog.Logger
	// Clock drives the lease renewals and the early wait. Defaults to the
	// process clock.
	Clock Clock
}

// SlotLockResult says what LockSlot did with its slot.
type SlotLockResult struct {
	Slot time.Time // the occurrence claimed, in UTC
	Ran  bool      // fn ran: this call won the slot's claim
	// Refusal says why fn did not run (completed or skipped already,
	// running under another holder, out of attempts, paused, …); empty
	// when it ran.
	Refusal store.ClaimRefusal
	// Holder names who has the slot when fn did not run: the lease's
	// holder (store.ClaimHeld, store.ClaimLeaseBusy), otherwise the owner
	// of the slot's claim. Empty when unknown.
	Holder string
	// Attempt is the attempt fn ran as (1 for the slot's first); when fn
	// did not run, how many the slot had had.
	Attempt    int
	Generation int64 // the run's fencing token; when refused, a holder's
	// Status is the slot's status as this call left or found it: after a
	// run, as its end was recorded (empty when it was not, or the slot was
	// taken over); when refused, the status of the slot's claim.
	Status store.SlotStatus
	Claim  store.SlotClaimResult // the store's answer to the claim
}

// Validate checks l's fields as LockSlot does, without touching a store.
// The error wraps store.ErrInvalidArgument.
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
