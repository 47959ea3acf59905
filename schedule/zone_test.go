package schedule

import (
	"math/rand/v2"
	"testing"
	"time"
)

// periodAt returns a period that contains the instant asked about and has
// one offset throughout, and consecutive periods tile time, for every zone
// the tests use, from 1850 to 2300 (well past every zone's last listed
// transition, where Go computes bounds from the zone's rule).
func TestPeriodsTileTime(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(19, 20))
	zones := append([]string{"America/Santiago", "Asia/Gaza", "Africa/Cairo", "Australia/Sydney"}, propertyZones...)
	end := time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	for _, db := range zoneDatabases(t) {
		for _, z := range zones {
			testPeriodsTile(t, r, db.load(t, z), end)
		}
	}
}

func testPeriodsTile(t *testing.T, r *rand.Rand, loc *time.Location, end int64) {
	z := loc.String()
	{
		x := time.Date(1850, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
		for n := 0; x < end; n++ {
			if n > 5000 {
				t.Fatalf("%s: more than 5000 periods in 450 years", z)
			}
			p := periodAt(loc, x)
			if p.start > x || p.end <= x {
				t.Fatalf("%s: periodAt(%s) = [%s, %s) does not contain it", z, timeUnixUTC(x), timeUnixUTC(p.start), timeUnixUTC(p.end))
			}
			probes := []int64{x, p.end - 1}
			if p.start != noStart {
				probes = append(probes, p.start)
			}
			if p.end != noEnd {
				for range 3 {
					probes = append(probes, x+r.Int64N(p.end-x))
				}
			}
			for _, q := range probes {
				if off := offsetAt(loc, q); off != p.offset {
					t.Fatalf("%s: period [%s, %s) has offset %d but %d at %s", z,
						timeUnixUTC(p.start), timeUnixUTC(p.end), p.offset, off, timeUnixUTC(q))
				}
			}
			if p.end == noEnd {
				break
			}
			x = p.end
		}
	}
}

// The case that needs the repair: December 31 of a leap year past the
// listed transitions.
func TestPeriodAtLeapYearEnd(t *testing.T) {
	t.Parallel()
	for _, db := range zoneDatabases(t) {
		for _, z := range []string{"America/New_York", "America/St_Johns", "Australia/Sydney", "Europe/London"} {
			loc := db.load(t, z)
			for _, y := range []int{2024, 2028, 2072, 2096, 2104} {
				x := time.Date(y, 12, 31, 12, 0, 0, 0, time.UTC).Unix()
				p := periodAt(loc, x)
				if p.start > x || p.end <= x {
					t.Errorf("%s %s: periodAt(%d-12-31T12:00Z) = [%s, %s)", db.name, z, y, timeUnixUTC(p.start), timeUnixUTC(p.end))
				}
				// Next across that day finds the next morning.
				s := mustParse(t, "0 9 * * *", &Options{Location: loc})
				want := time.Date(y+1, 1, 1, 9, 0, 0, 0, loc)
				if got := s.Next(time.Date(y, 12, 31, 10, 0, 0, 0, loc)); !got.Equal(want) {
					t.Errorf("%s %s: Next from %d-12-31 10:00 = %s, want %s", db.name, z, y, rfc(got), rfc(want))
				}
			}
		}
	}
	// And the slot that exposed it: the St. John's period ending early made
	// Next give up.
	s := mustParse(t, "33,37-40 14 * 5 */5", &Options{Location: mustLoc(t, "America/St_Johns")})
	if got := rfc(s.Next(mustTime(t, "2072-11-07T16:48:30Z"))); got != "2073-05-05T14:33:00-02:30" {
		t.Errorf("Next = %s, want 2073-05-05T14:33:00-02:30", got)
	}
}

func TestPeriodHelpers(t *testing.T) {
	t.Parallel()
	utc := periodAt(time.UTC, 0)
	if utc.start != noStart || utc.end != noEnd || utc.offset != 0 || utc.wallStart() != noStart || utc.wallEnd() != noEnd {
		t.Errorf("periodAt(UTC) = %+v, want an unbounded period at offset 0", utc)
	}
	if got := utc.previousOffset(time.UTC); got != 0 {
		t.Errorf("previousOffset of an unbounded period = %d, want its own offset", got)
	}
	ny := mustLoc(t, "America/New_York")
	p := periodAt(ny, mustTime(t, "2024-03-10T12:00:00Z").Unix())
	if rfc(timeUnixUTC(p.start)) != "2024-03-10T07:00:00Z" || p.offset != -4*3600 || p.previousOffset(ny) != -5*3600 {
		t.Errorf("New York after the spring change: %+v", p)
	}
	if got := rfc(timeUnixUTC(p.wallStart())); got != "2024-03-10T03:00:00Z" {
		t.Errorf("wallStart = %s, want 03:00 (as a wall time)", got)
	}
	if got := rfc(timeUnixUTC(nextUTCYear(mustTime(t, "2024-12-31T23:59:59Z").Unix()))); got != "2025-01-01T00:00:00Z" {
		t.Errorf("nextUTCYear = %s", got)
	}
}
