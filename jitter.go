package cronfence

import (
	"fmt"
	"time"

	"github.com/cronfence/cronfence/internal/jitter"
	"github.com/cronfence/cronfence/internal/schedcache"
)

// A job's jitter (Job.Jitter) delays the start of each slot's run by a
// part of it derived from the job's name and the slot alone: every replica
// computes the same delay, so the slot, its claim and its once-ness are
// those of the slot itself, and only when it starts moves.

// jitterScan bounds the slots prepare reads to find a schedule's shortest
// interval: enough for a year of a daily spec, and quick for a secondly
// one, whose interval shows in its first two slots.
const (
	jitterScanSlots = 1000
	jitterScanSpan  = 366 * 24 * time.Hour
)

// delay is how long after slot its run starts (jitter.Delay): below
// Jitter and below the time to the job's next slot. Zero without a
// jitter.
func (r *registered) delay(slot time.Time) time.Duration {
	if r.Jitter <= 0 {
		return 0
	}
	return jitter.Delay(r.Name, r.Jitter, slot, r.sched.Next(slot))
}

// shortestInterval is the shortest time between two consecutive slots of
// sched among its next slots after from (at most jitterScanSlots, over at
// most jitterScanSpan), with the first of the two; zero when fewer than
// two slots come in that span.
func shortestInterval(sched *schedcache.Schedule, from time.Time) (time.Duration, time.Time) {
	var shortest time.Duration
	var at time.Time
	prev := sched.Next(from)
	end := from.Add(jitterScanSpan)
	for i := 0; i < jitterScanSlots && !prev.IsZero() && prev.Before(end); i++ {
		next := sched.Next(prev)
		if next.IsZero() {
			break
		}
		if gap := next.Sub(prev); shortest == 0 || gap < shortest {
			shortest, at = gap, prev
		}
		prev = next
	}
	return shortest, at
}

// checkJitter refuses a jitter that is negative, or not below the
// shortest interval between two slots of the job (the delayed run would
// start at or after the next slot), or not below a deadline, which counts
// from the slot.
func (j *Job) checkJitter(sched *schedcache.Schedule) error {
	switch {
	case j.Jitter < 0:
		return errInvalid(fmt.Sprintf("job %q: Jitter must not be negative, got %s", j.Name, j.Jitter))
	case j.Jitter == 0:
		return nil
	case j.Deadline > 0 && j.Deadline <= j.Jitter:
		return errInvalid(fmt.Sprintf("job %q: Jitter %s must be below the Deadline %s, which counts from the slot", j.Name, j.Jitter, j.Deadline))
	}
	if gap, at := shortestInterval(sched, time.Now()); gap > 0 && j.Jitter >= gap {
		return errInvalid(fmt.Sprintf("job %q: Jitter %s must be below the shortest interval between two of its slots, %s (from %s): a delayed run would start at or after the next slot",
			j.Name, j.Jitter, gap, at.Format(time.RFC3339)))
	}
	return nil
}
