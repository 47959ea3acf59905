package forecast

import "time"

// Span is a job's slots over a stretch of time, counted: how many there
// are, how many run, and which exclusions hold the others.
type Span struct {
	// From and To bound the slots counted: (From, To]. To is earlier
	// than asked when the count stopped at maxSpanSlots (Complete false).
	From, To time.Time
	Complete bool
	// Slots is how many slots the schedule has in the span; Runs how many
	// of them no exclusion holds, FirstRuns the first few of those.
	Slots, Runs int
	FirstRuns   []time.Time
	// Excluded are the exclusions that hold slots of the span, in the
	// order they first do.
	Excluded []Met
}

// Met is one exclusion entry meeting a job's slots.
type Met struct {
	Entry string
	Count int
	First time.Time
}

const (
	// maxSpanSlots bounds the slots one CountSpan walks: a year of a job
	// every ten seconds is three million; a few days of it say enough.
	maxSpanSlots = 200_000
	// firstRuns is how many runs a Span keeps.
	firstRuns = 4
)

// CountSpan counts j's slots in (from, to].
func CountSpan(j Job, from, to time.Time) Span {
	sp := Span{From: from, To: to, Complete: true}
	index := map[string]int{}
	t := from
	for {
		next := j.Schedule.Next(t)
		if next.IsZero() || next.After(to) {
			return sp
		}
		if sp.Slots == maxSpanSlots {
			sp.To, sp.Complete = t, false
			return sp
		}
		t = next
		sp.Slots++
		entry, excluded := j.Exclusions.Match(t)
		if !excluded {
			sp.Runs++
			if len(sp.FirstRuns) < firstRuns {
				sp.FirstRuns = append(sp.FirstRuns, t)
			}
			continue
		}
		i, ok := index[entry]
		if !ok {
			i = len(sp.Excluded)
			index[entry] = i
			sp.Excluded = append(sp.Excluded, Met{Entry: entry, First: t})
		}
		sp.Excluded[i].Count++
	}
}
