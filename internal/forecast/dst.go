package forecast

import (
	"fmt"
	"time"

	"github.com/cronfence/cronfence/schedule"
)

// Outcome is what one change of a zone's offset does to one job.
type Outcome int

const (
	// Unaffected: the spec names no wall time the change skips or
	// repeats.
	Unaffected Outcome = iota
	// Moved: a fixed-time job's wall times in the skipped stretch run at
	// the change, the first instant after it (02:30 runs at 03:00 EDT).
	Moved
	// Skipped: a wildcard job's wall times in the skipped stretch do not
	// run.
	Skipped
	// Lost: a fixed-time job's wall times in a stretch of 3 hours or more
	// (Samoa skipping a day) do not run: as in cronie, such a jump is a
	// clock reset.
	Lost
	// RunsOnce: a fixed-time job's wall times in the repeated stretch run
	// the first time only.
	RunsOnce
	// RunsTwice: a wildcard job's wall times in the repeated stretch run
	// in both passes.
	RunsTwice
	// Shifted: an @every job's slots do not change, its wall times do.
	Shifted
)

// Effect is what one Transition does to one job.
type Effect struct {
	Change  Transition
	Outcome Outcome
	// Count is how many wall times the spec names in the skipped or the
	// repeated stretch; First and Last are the earliest and the latest,
	// shown as the clock reads them (zero when Count is 0).
	Count       int
	First, Last time.Time
	// Merged: the wall times Moved to the change land on a slot the spec
	// names there anyway, and run once with it (a slot is an instant).
	Merged bool
}

// maxStretchTimes bounds the wall times counted in one skipped or repeated
// stretch, and the slots counted in one pass: a secondly job has 3600 an
// hour; the bound only caps the work on stranger zones.
const maxStretchTimes = 100_000

// Effects returns what each change of the zone's offset at an instant in
// (from, to] does to s, in order. The zone is the one s's slots are in (a
// CRON_TZ= prefix wins over the job's zone, as it does for the scheduler).
func Effects(s schedule.Schedule, from, to time.Time) ([]Effect, error) {
	loc := zoneOf(s, from)
	if loc == nil {
		return nil, nil
	}
	changes := Transitions(loc, from, to)
	if len(changes) == 0 {
		return nil, nil
	}
	out := make([]Effect, 0, len(changes))
	for _, c := range changes {
		e, err := effect(s, c)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// zoneOf returns the zone of s's slots, nil when s has none near t.
func zoneOf(s schedule.Schedule, t time.Time) *time.Location {
	if n := s.Next(t); !n.IsZero() {
		return n.Location()
	}
	if p := s.Prev(t); !p.IsZero() {
		return p.Location()
	}
	return nil
}

// effect compares s's real slots around change c with the wall times the
// spec names there, which s evaluated in a zone that does not change (the
// offset on the side of c where those wall times are unambiguous) lists.
func effect(s schedule.Schedule, c Transition) (Effect, error) {
	e := Effect{Change: c}
	kind := KindOf(s.String())
	if kind == Elapsed {
		e.Outcome = Shifted
		return e, nil
	}
	jump := c.Jump()
	side := c.before() // a skipped stretch's wall times exist before it
	if jump < 0 {
		side = c.after() // a repeated stretch's second pass is after it
	}
	naive, err := schedule.Parse(bareSpec(s.String()), &schedule.Options{Location: side})
	if err != nil {
		return e, fmt.Errorf("forecast: spec %q read at a fixed offset: %w", s.String(), err)
	}
	// In the fixed zone, the stretch's wall times are the instants
	// [c.At, c.At+|jump|).
	start, end := c.At, c.At.Add(jump.Abs())
	e.Count, e.First, e.Last = between(naive, start, end)
	if e.Count == 0 {
		return e, nil // Unaffected
	}
	if jump > 0 {
		atChange := s.Next(start.Add(-time.Second)).Equal(start)
		endNamed := naive.Next(end.Add(-time.Second)).Equal(end)
		switch {
		case atChange && (kind == Fixed || !endNamed):
			// A wildcard job with a slot at the change owes it to the
			// stretch's end, which the spec names: then both kinds run
			// once there, and the kind words it.
			e.Outcome, e.Merged = Moved, endNamed
		case kind == Fixed:
			e.Outcome = Lost
		default:
			e.Outcome = Skipped
		}
		return e, nil
	}
	if n, _, _ := between(s, start.Add(jump), start); n == 0 {
		// Nothing in the first pass: cannot happen for the wall times
		// counted above, unless s was built some other way. Say nothing.
		return e, nil
	}
	if n, _, _ := between(s, start, end); n > 0 {
		e.Outcome = RunsTwice
	} else {
		e.Outcome = RunsOnce
	}
	return e, nil
}

// between counts s's slots in [from, to), with the first and the last.
func between(s schedule.Schedule, from, to time.Time) (n int, first, last time.Time) {
	for t := s.Next(from.Add(-time.Second)); !t.IsZero() && t.Before(to) && n < maxStretchTimes; t = s.Next(t) {
		if n == 0 {
			first = t
		}
		n, last = n+1, t
	}
	return n, first, last
}

// String says what the change does to the job, as a clock on the wall
// shows it: "the 02:30 run moves to 03:00 EDT".
func (e Effect) String() string {
	c := e.Change
	at := c.At.Format("15:04 MST")
	runs := e.runs()
	switch e.Outcome {
	case Moved:
		if e.Merged {
			return fmt.Sprintf("%s and the %s run are one run, at %s", runs, c.At.Format("15:04"), at)
		}
		if e.Count == 1 {
			return fmt.Sprintf("%s moves to %s", runs, at)
		}
		return fmt.Sprintf("%s run once, at %s", runs, at)
	case Skipped:
		return fmt.Sprintf("%s %s not happen: %s does not exist that day", runs, verb(e.Count, "does", "do"), e.stretch())
	case Lost:
		return fmt.Sprintf("%s %s not happen: a jump of 3h or more is a clock reset, and the fixed times in it are lost (as in cronie)",
			runs, verb(e.Count, "does", "do"))
	case RunsOnce:
		if e.Count == 1 {
			return fmt.Sprintf("%s happens once, at %s, not again at %s", runs,
				e.First.Format("15:04 ")+c.BeforeName, e.First.Format("15:04 ")+c.AfterName)
		}
		return fmt.Sprintf("%s happen once each, in %s, not again in %s", runs, c.BeforeName, c.AfterName)
	case RunsTwice:
		if e.Count == 1 {
			return fmt.Sprintf("%s happens twice: at %s and again at %s", runs,
				e.First.Format("15:04 ")+c.BeforeName, e.First.Format("15:04 ")+c.AfterName)
		}
		return fmt.Sprintf("%s happen twice: in %s, then again in %s", runs, c.BeforeName, c.AfterName)
	case Shifted:
		dir := "later"
		if c.Jump() < 0 {
			dir = "earlier"
		}
		return fmt.Sprintf("no slot changes (@every counts elapsed time); its wall times move %s %s", shortDuration(c.Jump().Abs()), dir)
	}
	if c.Jump() > 0 {
		return fmt.Sprintf("no effect: the job names no time in the skipped %s", e.stretch())
	}
	return fmt.Sprintf("no effect: the job names no time in the repeated %s", e.stretch())
}

// Note says how the change touches slot, "" when it does not: the slot a
// skipped time moved to, or a slot in a repeated stretch.
func (e Effect) Note(slot time.Time) string {
	c := e.Change
	d := c.Jump().Abs()
	switch e.Outcome {
	case Moved:
		if slot.Equal(c.At) {
			return fmt.Sprintf("moved here from %s (%s does not exist that day)", e.walls(), e.stretch())
		}
	case RunsOnce:
		if !slot.Before(c.At.Add(-d)) && slot.Before(c.At) {
			return fmt.Sprintf("%s repeats after the change to %s; this run is not repeated", e.stretch(), c.AfterName)
		}
	case RunsTwice:
		if !slot.Before(c.At.Add(-d)) && slot.Before(c.At) {
			return fmt.Sprintf("first pass of the repeated %s (%s); runs again in %s", e.stretch(), c.BeforeName, c.AfterName)
		}
		if !slot.Before(c.At) && slot.Before(c.At.Add(d)) {
			return fmt.Sprintf("second pass of the repeated %s (%s)", e.stretch(), c.AfterName)
		}
	}
	return ""
}

// runs names the wall times counted: "the 02:30 run", "the 4 runs of
// 02:00–02:45".
func (e Effect) runs() string {
	if e.Count == 1 {
		return "the " + e.walls() + " run"
	}
	return fmt.Sprintf("the %d runs of %s", e.Count, e.walls())
}

// walls is the wall times counted: "02:30", "02:00–02:45".
func (e Effect) walls() string {
	layout := "15:04"
	if e.First.Second() != 0 || e.Last.Second() != 0 {
		layout = "15:04:05"
	}
	if e.Count == 1 {
		return e.First.Format(layout)
	}
	return e.First.Format(layout) + "–" + e.Last.Format(layout)
}

// stretch is the wall times skipped or repeated, by the minute:
// "02:00–02:59".
func (e Effect) stretch() string {
	c := e.Change
	side := c.before()
	if c.Jump() < 0 {
		side = c.after()
	}
	first := c.At.In(side)
	last := c.At.Add(c.Jump().Abs() - time.Minute).In(side)
	return first.Format("15:04") + "–" + last.Format("15:04")
}

func verb(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
