package schedule

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// checkInvariants checks what doc.go promises about Next and Prev at t:
//
//	Next(t) > t and Prev(t) <= t (or the zero time);
//	slots are whole seconds in the schedule's location;
//	Prev(s) == s for a slot s, and Next(s - 1ns) == s;
//	nothing lies between t and Next(t): Prev(Next(t) - 1ns) == Prev(t);
//	nothing lies between Prev(t) and t: Next(Prev(t)) == Next(t).
//
// The last two say Next and Prev see one and the same set of slots.
func checkInvariants(s Schedule, loc *time.Location, t time.Time) error {
	n, p := s.Next(t), s.Prev(t)
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%q at %s (Next %s, Prev %s): %s", s, t.Format(time.RFC3339Nano), rfc(n), rfc(p), fmt.Sprintf(format, args...))
	}
	isSlot := func(x time.Time) error {
		if x.Nanosecond() != 0 {
			return fail("%s is not a whole second", x)
		}
		if x.Location() != loc {
			return fail("%s is in %v, not %v", x, x.Location(), loc)
		}
		if x.Unix() < minSlot || x.Unix() > maxSlot {
			return fail("%s is outside the range of slots", x)
		}
		return nil
	}
	if !n.IsZero() {
		if !n.After(t) {
			return fail("Next is not after t")
		}
		if err := isSlot(n); err != nil {
			return err
		}
		if got := s.Prev(n); !got.Equal(n) {
			return fail("Prev(Next) = %s", rfc(got))
		}
		if got := s.Prev(n.Add(-time.Nanosecond)); !got.Equal(p) {
			return fail("Prev(Next - 1ns) = %s: a slot between t and Next", rfc(got))
		}
	}
	if !p.IsZero() {
		if p.After(t) {
			return fail("Prev is after t")
		}
		if err := isSlot(p); err != nil {
			return err
		}
		if got := s.Next(p.Add(-time.Nanosecond)); !got.Equal(p) {
			return fail("Next(Prev - 1ns) = %s", rfc(got))
		}
		if got := s.Next(p); !got.Equal(n) {
			return fail("Next(Prev) = %s: a slot between Prev and t", rfc(got))
		}
	}
	return nil
}

var propertyZones = []string{
	"UTC", "America/New_York", "Europe/London", "America/Sao_Paulo", "Australia/Lord_Howe", "Pacific/Apia",
	"Pacific/Chatham", "Asia/Kolkata", "America/St_Johns", "Europe/Dublin", "Africa/Casablanca", "Antarctica/Troll",
	"Asia/Tehran", "Pacific/Kiritimati", "America/Caracas", "Europe/Moscow", "Asia/Kathmandu", "Australia/Adelaide",
	"Africa/Monrovia", "America/Juneau", "Asia/Pyongyang", "Pacific/Kwajalein",
}

// randomInstant picks a time to ask about: usually somewhere in 1900-2100,
// often right by one of the zone's transitions, sometimes at the edges.
func randomInstant(r *rand.Rand, loc *time.Location) time.Time {
	lo, hi := time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	x := time.Unix(lo+r.Int64N(hi-lo), r.Int64N(2)*r.Int64N(1e9))
	switch r.IntN(10) {
	case 0, 1, 2, 3: // next to a transition
		if _, end := x.In(loc).ZoneBounds(); !end.IsZero() {
			x = end.Add(time.Duration(r.Int64N(6*3600)-3*3600) * time.Second)
		}
	case 4: // the far past or future
		x = time.Unix(minSlot+r.Int64N(1e9)-1e8, 0)
		if r.IntN(2) == 0 {
			x = time.Unix(maxSlot-r.Int64N(1e9)+1e8, 0)
		}
	}
	return x
}

func TestInvariants(t *testing.T) {
	t.Parallel()
	locs := make([]*time.Location, len(propertyZones))
	for i, z := range propertyZones {
		locs[i] = mustLoc(t, z)
	}
	r := rand.New(rand.NewPCG(15, 16))
	n := 20000
	if testing.Short() {
		n = 3000
	}
	for range n {
		loc := locs[r.IntN(len(locs))]
		expr := randomFiringSpec(r, r.IntN(4) == 0)
		switch r.IntN(8) {
		case 0:
			expr = fmt.Sprintf("@every %ds", 1+r.Int64N(200000))
		case 1:
			expr = []string{"@yearly", "@monthly", "@weekly", "@daily", "@hourly"}[r.IntN(5)]
		}
		s := mustParse(t, expr, &Options{Location: loc, Anchor: time.Unix(r.Int64N(1e10)-5e9, 0)})
		at := randomInstant(r, loc)
		if err := checkInvariants(s, loc, at); err != nil {
			t.Fatal(err)
		}
		// A spec that parses always has a next slot well inside the range:
		// daylight saving can drop appointments, never all of them.
		if _, ok := s.(*cronSchedule); ok && at.Year() > 1 && at.Year() < 9000 {
			if s.Next(at).IsZero() || (at.Year() > 100 && s.Prev(at).IsZero()) {
				t.Fatalf("%q in %v at %s: Next %s, Prev %s; want slots both ways", expr, loc, at, rfc(s.Next(at)), rfc(s.Prev(at)))
			}
		}
	}
}

// Next and Prev never go backwards as t moves forwards.
func TestMonotonic(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(17, 18))
	for range 2000 {
		loc := mustLoc(t, propertyZones[r.IntN(len(propertyZones))])
		s := mustParse(t, randomFiringSpec(r, r.IntN(4) == 0), &Options{Location: loc})
		t1 := randomInstant(r, loc)
		t2 := t1.Add(time.Duration(r.Int64N(int64(48 * time.Hour))))
		if n1, n2 := s.Next(t1), s.Next(t2); !n2.IsZero() && n2.Before(n1) {
			t.Fatalf("%q in %v: Next(%s) = %s but Next(%s) = %s", s, loc, t1, n1, t2, n2)
		}
		if p1, p2 := s.Prev(t1), s.Prev(t2); p2.Before(p1) {
			t.Fatalf("%q in %v: Prev(%s) = %s but Prev(%s) = %s", s, loc, t1, p1, t2, p2)
		}
	}
}
