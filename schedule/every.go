package schedule

import "time"

// everySchedule is "@every D": the instants anchor + k·D for every integer
// k, in absolute time. Anchoring (rather than "now + D") is what lets every
// replica compute the same slots without talking to each other, and
// absolute time is why daylight saving does not touch it: "@every 1h"
// fires 25 times on the day the clock falls back.
type everySchedule struct {
	text   string
	loc    *time.Location
	every  int64 // seconds, >= 1
	anchor int64 // Unix seconds, inside [minSlot, maxSlot]
}

var _ Schedule = (*everySchedule)(nil)

func (e *everySchedule) String() string { return e.text }

// Next returns the first slot strictly after t. Both t and the anchor lie
// within a few hundred billion seconds of 1970 once clamped, so none of the
// arithmetic can overflow.
func (e *everySchedule) Next(t time.Time) time.Time {
	s := t.Unix() // a whole-second slot is after t exactly when it is after s
	if s >= maxSlot {
		return time.Time{}
	}
	s = max(s, minSlot-1)
	k := floorDiv(s-e.anchor, e.every) + 1
	return e.slot(e.anchor + k*e.every)
}

// Prev returns the last slot at or before t.
func (e *everySchedule) Prev(t time.Time) time.Time {
	s := t.Unix()
	if s < minSlot {
		return time.Time{}
	}
	s = min(s, maxSlot)
	k := floorDiv(s-e.anchor, e.every)
	return e.slot(e.anchor + k*e.every)
}

func (e *everySchedule) slot(x int64) time.Time {
	if x < minSlot || x > maxSlot {
		return time.Time{}
	}
	return time.Unix(x, 0).In(e.loc)
}
