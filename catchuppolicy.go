package cronfence

import (
	"fmt"
	"time"

	"github.com/cronfence/cronfence/store"
)

// A job's catch-up policy: which of the slots it missed run, and how many
// are looked at (catch-up itself, the claims, is the claimer's: catchup.go
// and catchupqueue.go).

// CatchUp is which slots a job missed (while no replica ran, or while the
// store could not be reached) it runs at start-up and once the store is
// back, inside its CatchUpWindow.
type CatchUp string

const (
	// CatchUpNone runs no missed slot. The default when CatchUpWindow is
	// zero.
	CatchUpNone CatchUp = "none"
	// CatchUpLatest runs the most recent missed slot, once. The default
	// when CatchUpWindow is positive.
	CatchUpLatest CatchUp = "latest"
	// CatchUpAll runs every missed slot, each once, oldest first, one
	// after another: catch-up looks at the job's MaxCatchUp most recent
	// slots inside the window, never one from before the job existed, and
	// runs those nobody claimed. A catch-up run never overlaps another run
	// of the job: its claim waits for the job's lease rather than being
	// recorded as an overlap (an OverlapAllow job, whose slots each have a
	// lease of their own, runs its catch-ups one after another per
	// replica).
	CatchUpAll CatchUp = "all"
)

const (
	// DefaultMaxCatchUp is how many slots back catch-up of policy
	// CatchUpAll looks when Job.MaxCatchUp is zero.
	DefaultMaxCatchUp = 100
	// MaxCatchUpLimit bounds Job.MaxCatchUp: each slot looked at costs a
	// claim at every start-up.
	MaxCatchUpLimit = store.MaxCatchUp
)

// prepareCatchUp checks the catch-up settings and fills in their
// defaults.
func (j *Job) prepareCatchUp() error {
	if j.CatchUpWindow < 0 {
		return errInvalid(fmt.Sprintf("job %q: CatchUpWindow must not be negative, got %s", j.Name, j.CatchUpWindow))
	}
	if j.CatchUp == "" {
		j.CatchUp = CatchUpNone
		if j.CatchUpWindow > 0 {
			j.CatchUp = CatchUpLatest
		}
	}
	switch j.CatchUp {
	case CatchUpNone:
		if j.CatchUpWindow > 0 {
			return errInvalid(fmt.Sprintf("job %q: CatchUp %q with a CatchUpWindow of %s: the window says how late a missed slot still runs, and none does; drop one", j.Name, j.CatchUp, j.CatchUpWindow))
		}
	case CatchUpLatest, CatchUpAll:
		if j.CatchUpWindow == 0 {
			return errInvalid(fmt.Sprintf("job %q: CatchUp %q needs a CatchUpWindow: how late a missed slot still runs", j.Name, j.CatchUp))
		}
	default:
		return errInvalid(fmt.Sprintf("job %q: CatchUp must be %q, %q or %q, got %q", j.Name, CatchUpNone, CatchUpLatest, CatchUpAll, j.CatchUp))
	}
	switch {
	case j.MaxCatchUp < 0:
		return errInvalid(fmt.Sprintf("job %q: MaxCatchUp must not be negative, got %d", j.Name, j.MaxCatchUp))
	case j.MaxCatchUp > 0 && j.CatchUp != CatchUpAll:
		return errInvalid(fmt.Sprintf("job %q: MaxCatchUp applies only to CatchUp %q, not %q", j.Name, CatchUpAll, j.CatchUp))
	case j.MaxCatchUp > MaxCatchUpLimit:
		return errInvalid(fmt.Sprintf("job %q: MaxCatchUp must be at most %d, got %d", j.Name, MaxCatchUpLimit, j.MaxCatchUp))
	case j.MaxCatchUp == 0 && j.CatchUp == CatchUpAll:
		j.MaxCatchUp = DefaultMaxCatchUp
	}
	return nil
}

// catchUpKept refuses a catch-up of policy all whose window is not
// shorter than retention (when pruning is on): catch-up runs every slot of
// its window without a claim, and would run again a slot whose claim was
// pruned. Policy latest only runs a job's latest slot, whose claim is
// never pruned.
func (r *registered) catchUpKept(retention time.Duration) error {
	if r.CatchUp == CatchUpAll && retention > 0 && r.CatchUpWindow >= retention {
		return errInvalid(fmt.Sprintf("job %q: CatchUpWindow %s must be shorter than Config.Retention %s with CatchUp %q, or catch-up would run again a slot whose claim was pruned",
			r.Name, r.CatchUpWindow, retention, r.CatchUp))
	}
	return nil
}
