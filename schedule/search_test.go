package schedule

import (
	"math/rand/v2"
	"testing"
)

func wallOf(t testing.TB, s string) int64 {
	t.Helper()
	return mustTime(t, s).Unix()
}

func wallString(w int64) string {
	return rfc(timeUnixUTC(w))
}

func TestNextPrevWall(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec string
		from string
		next string // first match at or after from
		prev string // last match at or before from
	}{
		{"*/15 * * * *", "2024-01-01T00:07:00Z", "2024-01-01T00:15:00Z", "2024-01-01T00:00:00Z"},
		{"*/15 * * * *", "2024-01-01T00:15:00Z", "2024-01-01T00:15:00Z", "2024-01-01T00:15:00Z"}, // at is inclusive
		{"*/15 * * * *", "2024-01-01T00:15:01Z", "2024-01-01T00:30:00Z", "2024-01-01T00:15:00Z"},
		{"0 0 31 * *", "2024-04-01T00:00:00Z", "2024-05-31T00:00:00Z", "2024-03-31T00:00:00Z"},
		{"0 0 29 2 *", "2024-03-01T00:00:00Z", "2028-02-29T00:00:00Z", "2024-02-29T00:00:00Z"},
		{"0 0 29 2 */7", "2004-03-01T00:00:00Z", "2032-02-29T00:00:00Z", "2004-02-29T00:00:00Z"}, // February 29 on a Sunday
		{"0 0 29 2 */7", "2100-01-01T00:00:00Z", "2128-02-29T00:00:00Z", "2088-02-29T00:00:00Z"}, // 40 years: 2100 is not leap
		{"59 23 31 12 *", "2024-12-31T23:59:00Z", "2024-12-31T23:59:00Z", "2024-12-31T23:59:00Z"},
		{"59 23 31 12 *", "2024-12-31T23:59:01Z", "2025-12-31T23:59:00Z", "2024-12-31T23:59:00Z"},
		{"0 0 1 1 *", "2024-12-31T23:59:59Z", "2025-01-01T00:00:00Z", "2024-01-01T00:00:00Z"},
		{"30 10 * * 1-5", "2024-01-06T12:00:00Z", "2024-01-08T10:30:00Z", "2024-01-05T10:30:00Z"}, // over a weekend
		{"15,45 30 9 * * *", "2024-01-01T09:30:20Z", "2024-01-01T09:30:45Z", "2024-01-01T09:30:15Z"},
		{"*/20 * * * * *", "2024-01-01T23:59:59Z", "2024-01-02T00:00:00Z", "2024-01-01T23:59:40Z"},
		{"0 0 1,15 * MON", "2024-01-02T00:00:00Z", "2024-01-08T00:00:00Z", "2024-01-01T00:00:00Z"},
	}
	for _, tt := range tests {
		s := mustSpec(t, tt.spec)
		from := wallOf(t, tt.from)
		if w, ok := s.nextWall(from); !ok || wallString(w) != tt.next {
			t.Errorf("%q nextWall(%s) = %s, %v; want %s", tt.spec, tt.from, wallString(w), ok, tt.next)
		}
		if w, ok := s.prevWall(from); !ok || wallString(w) != tt.prev {
			t.Errorf("%q prevWall(%s) = %s, %v; want %s", tt.spec, tt.from, wallString(w), ok, tt.prev)
		}
	}
}

func TestWallSearchNever(t *testing.T) {
	t.Parallel()
	s := mustSpec(t, "0 0 30 2 *")
	if w, ok := s.nextWall(wallOf(t, "2024-01-01T00:00:00Z")); ok {
		t.Errorf("nextWall found %s for a spec that never matches", wallString(w))
	}
	if w, ok := s.prevWall(wallOf(t, "2024-01-01T00:00:00Z")); ok {
		t.Errorf("prevWall found %s for a spec that never matches", wallString(w))
	}
}

// The field-by-field search agrees with trying every second (or minute)
// one at a time, for random specs and starting points.
func TestWallSearchAgreesWithBruteForce(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	lo, hi := wallOf(t, "1995-01-01T00:00:00Z"), wallOf(t, "2035-01-01T00:00:00Z")
	for i := range 400 {
		withSeconds := i%4 == 0
		expr := randomSpec(r, withSeconds)
		s := mustSpec(t, expr)
		step, window := int64(60), int64(3*secondsPerDay) // minutes over three days
		if withSeconds {
			step, window = 1, 4*3600 // seconds over four hours
		}
		from := lo + r.Int64N(hi-lo)
		from -= floorMod(from, step)

		brute := func(w int64, dir int64) (int64, bool) {
			for n := int64(0); n <= window; n += step {
				if s.matches(civilOf(w + dir*n)) {
					return w + dir*n, true
				}
			}
			return 0, false
		}
		if want, ok := brute(from, 1); ok {
			if got, _ := s.nextWall(from); got != want {
				t.Fatalf("%q nextWall(%s) = %s, want %s", expr, wallString(from), wallString(got), wallString(want))
			}
		} else if got, ok := s.nextWall(from); ok && got <= from+window {
			t.Fatalf("%q nextWall(%s) = %s, but that does not match", expr, wallString(from), wallString(got))
		}
		if want, ok := brute(from, -1); ok {
			if got, _ := s.prevWall(from); got != want {
				t.Fatalf("%q prevWall(%s) = %s, want %s", expr, wallString(from), wallString(got), wallString(want))
			}
		} else if got, ok := s.prevWall(from); ok && got >= from-window {
			t.Fatalf("%q prevWall(%s) = %s, but that does not match", expr, wallString(from), wallString(got))
		}
	}
}

// Every answer of the search matches, and nothing between the start and
// the answer does (checked at day granularity first, for long gaps).
func TestWallSearchResultsMatch(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(9, 10))
	for range 3000 {
		expr := randomSpec(r, r.IntN(2) == 0)
		s := mustSpec(t, expr)
		from := wallOf(t, "1900-01-01T00:00:00Z") + r.Int64N(200*365*secondsPerDay)
		if w, ok := s.nextWall(from); ok && (w < from || !s.matches(civilOf(w))) {
			t.Fatalf("%q nextWall(%s) = %s, which does not match", expr, wallString(from), wallString(w))
		}
		if w, ok := s.prevWall(from); ok && (w > from || !s.matches(civilOf(w))) {
			t.Fatalf("%q prevWall(%s) = %s, which does not match", expr, wallString(from), wallString(w))
		}
	}
}

// The per-call cache answers exactly what a fresh search would.
func TestWallSearchCache(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(11, 12))
	for range 200 {
		s := mustSpec(t, randomSpec(r, false))
		ws := wallSearch{s: s}
		base := wallOf(t, "2020-01-01T00:00:00Z")
		for range 50 {
			q := base + r.Int64N(5*365*secondsPerDay)
			gotN, okN := ws.next(q)
			wantN, wantOKN := s.nextWall(q)
			gotP, okP := ws.prev(q)
			wantP, wantOKP := s.prevWall(q)
			if gotN != wantN || okN != wantOKN || gotP != wantP || okP != wantOKP {
				t.Fatalf("cache disagrees at %s", wallString(q))
			}
		}
	}
}
