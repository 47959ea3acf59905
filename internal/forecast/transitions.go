package forecast

import (
	"fmt"
	"strings"
	"time"
)

// Transition is an instant at which a zone's UTC offset changes: a
// daylight-saving change, or a zone moving to another standard time.
type Transition struct {
	// At is the first instant of the new offset, in the zone.
	At time.Time
	// Before and After are the offsets, in seconds east of UTC, and their
	// abbreviations ("EST", "EDT", "+1030").
	BeforeOffset, AfterOffset int
	BeforeName, AfterName     string
}

// Jump is how far the wall clock moves at the change: positive when it
// skips forward (a gap of wall times that never happen), negative when it
// is set back (a stretch of wall times that happen twice).
func (t Transition) Jump() time.Duration {
	return time.Duration(t.AfterOffset-t.BeforeOffset) * time.Second
}

// before returns a zone that shows instants as the clock read just before
// the change.
func (t Transition) before() *time.Location { return time.FixedZone(t.BeforeName, t.BeforeOffset) }

// after returns a zone that shows instants as the clock reads just after
// the change.
func (t Transition) after() *time.Location { return time.FixedZone(t.AfterName, t.AfterOffset) }

// String is the change as a clock on the wall shows it:
// "2027-03-14 02:00 EST → 03:00 EDT (clocks forward 1h)".
func (t Transition) String() string {
	from, to := t.At.In(t.before()), t.At.In(t.after())
	layout := "15:04 MST"
	if from.YearDay() != to.YearDay() {
		layout = "2006-01-02 15:04 MST"
	}
	dir := "forward"
	if t.Jump() < 0 {
		dir = "back"
	}
	return fmt.Sprintf("%s → %s (clocks %s %s)", from.Format("2006-01-02 15:04 MST"), to.Format(layout), dir, shortDuration(t.Jump().Abs()))
}

// scanStep is how far apart Transitions samples a zone's offset. Go has no
// API listing a zone's transitions (ZoneBounds is wrong past a zone's last
// listed transition in leap years, see schedule/zone.go), so offsets are
// sampled and each change bisected to the second; no zone changes its
// offset twice within an hour.
const scanStep = time.Hour

// Transitions returns the changes of loc's UTC offset at instants in
// (from, to], in order.
func Transitions(loc *time.Location, from, to time.Time) []Transition {
	var out []Transition
	from = from.Truncate(time.Second)
	_, off := from.In(loc).Zone()
	for t := from; t.Before(to); {
		next := t.Add(scanStep)
		if next.After(to) {
			next = to
		}
		if _, o := next.In(loc).Zone(); o != off {
			tr := bisect(loc, t, next, off)
			out = append(out, tr)
			off = tr.AfterOffset
			t = tr.At
			continue
		}
		t = next
	}
	return out
}

// bisect finds the first second in (lo, hi] at which loc's offset is no
// longer off, knowing it is off at lo and not at hi.
func bisect(loc *time.Location, lo, hi time.Time, off int) Transition {
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2).Truncate(time.Second)
		if mid.Equal(lo) {
			mid = lo.Add(time.Second)
		}
		if _, o := mid.In(loc).Zone(); o == off {
			lo = mid
		} else {
			hi = mid
		}
	}
	beforeName, beforeOff := lo.In(loc).Zone()
	afterName, afterOff := hi.In(loc).Zone()
	return Transition{At: hi.In(loc), BeforeOffset: beforeOff, AfterOffset: afterOff, BeforeName: beforeName, AfterName: afterName}
}

// shortDuration prints d without trailing zero units: 1h, 30m, 1h30m, 24h.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
