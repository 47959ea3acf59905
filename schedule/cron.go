package schedule

import "time"

// maxPeriods caps the zone periods one Next or Prev call may cross. A
// satisfiable spec matches at least once in 40 years, which is under 100
// periods in any zone that changes its clock twice a year; the cap is
// generous and only guarantees bounded work on strange zone data.
const maxPeriods = 4096

// cronSchedule is a cron expression evaluated in a time zone.
type cronSchedule struct {
	text string
	loc  *time.Location
	spec *spec
}

var _ Schedule = (*cronSchedule)(nil)

func (c *cronSchedule) String() string { return c.text }

// Next returns the first slot strictly after t.
//
// It walks the zone's periods forward from t. Within a period the slots are
// the matching wall times minus the period's offset, so each period needs
// one wall-clock search; fixed-time jobs add the slot at a period's start
// for appointments skipped by a forward jump, and ignore wall times a
// backward jump repeats (dst.go).
func (c *cronSchedule) Next(t time.Time) time.Time {
	from := t.Unix() + 1 // slots are whole seconds: the first candidate
	if from > maxSlot {
		return time.Time{}
	}
	from = max(from, minSlot)
	ws := wallSearch{s: c.spec}
	p := periodAt(c.loc, from)
	prevOff := p.previousOffset(c.loc)
	for range maxPeriods {
		lo := max(from+p.offset, p.wallStart())
		if c.spec.fixed {
			if p.start >= from && gapAppointment(&ws, p, prevOff, true) {
				return c.slot(p.start)
			}
			lo = max(lo, firstOccurrence(p, prevOff))
		}
		w, ok := ws.next(lo)
		if !ok {
			return time.Time{}
		}
		if w < p.wallEnd() {
			return c.slot(w - p.offset)
		}
		if p.end > maxSlot {
			return time.Time{}
		}
		prevOff = p.offset
		p = periodAt(c.loc, p.end)
	}
	return time.Time{}
}

// Prev returns the last slot at or before t. It mirrors Next, walking the
// zone's periods backwards.
func (c *cronSchedule) Prev(t time.Time) time.Time {
	to := t.Unix() // Unix rounds down, and slots are whole seconds
	if to < minSlot {
		return time.Time{}
	}
	to = min(to, maxSlot)
	ws := wallSearch{s: c.spec}
	p := periodAt(c.loc, to)
	for range maxPeriods {
		prevOff := p.previousOffset(c.loc)
		hi := to + p.offset
		lo := p.wallStart()
		if c.spec.fixed {
			lo = firstOccurrence(p, prevOff)
		}
		w, ok := ws.prev(hi)
		if !ok {
			return time.Time{}
		}
		if w >= lo {
			return c.slot(w - p.offset)
		}
		// Nothing inside the period; the slot at its start for skipped
		// appointments comes before anything inside it, so check it last.
		if c.spec.fixed && gapAppointment(&ws, p, prevOff, false) {
			return c.slot(p.start)
		}
		if p.start <= minSlot {
			return time.Time{}
		}
		to = p.start - 1
		p = periodAt(c.loc, to)
	}
	return time.Time{}
}

// slot turns a Unix second into the returned time, or the zero time if it
// falls outside the range of slots.
func (c *cronSchedule) slot(x int64) time.Time {
	if x < minSlot || x > maxSlot {
		return time.Time{}
	}
	return time.Unix(x, 0).In(c.loc)
}
