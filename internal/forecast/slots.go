package forecast

import (
	"time"

	"github.com/cronfence/cronfence/internal/jitter"
)

// Slot is one slot of a job as the scheduler will treat it.
type Slot struct {
	// At is the slot, the intended occurrence, in the job's zone.
	At time.Time
	// Delay is how long after At the run starts (jitter.Delay, with the
	// job's following slot as the scheduler passes it); zero without a
	// jitter.
	Delay time.Duration
	// Excluded is the exclusion entry that holds the slot, as written;
	// "" when the slot runs.
	Excluded string
	// Notes say how a change of the zone's offset touches the slot.
	Notes []string
}

// maxSlotSteps bounds the slots and exclusion jumps one Slots call walks
// to find a slot that runs: an exclusion may hold every slot.
const maxSlotSteps = 1_000_000

// dstReach is how far from a slot a change of offset can touch it: a
// repeated or a skipped stretch is at most a day long.
const dstReach = 25 * time.Hour

// Slots returns up to n slots of j after from. With withExcluded the slots
// an exclusion holds are listed too, Excluded naming it; without, they are
// passed over, as the scheduler passes them over. Fewer than n when the
// schedule has no more, or when no slot runs within maxSlotSteps steps.
func Slots(j Job, from time.Time, n int, withExcluded bool) ([]Slot, error) {
	var out []Slot
	t := from
	for len(out) < n {
		if withExcluded {
			t = j.Schedule.Next(t)
		} else {
			t = j.Exclusions.Next(j.Schedule, t, maxSlotSteps)
		}
		if t.IsZero() {
			break
		}
		s := Slot{At: t, Delay: jitter.Delay(j.Name, j.Jitter, t, j.Schedule.Next(t))}
		s.Excluded, _ = j.Exclusions.Match(t)
		notes, err := notes(j, t)
		if err != nil {
			return nil, err
		}
		s.Notes = notes
		out = append(out, s)
	}
	return out, nil
}

// notes returns what the changes of offset within dstReach of slot do to
// it.
func notes(j Job, slot time.Time) ([]string, error) {
	effects, err := Effects(j.Schedule, slot.Add(-dstReach), slot.Add(dstReach))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range effects {
		if n := e.Note(slot); n != "" {
			out = append(out, n)
		}
	}
	return out, nil
}
