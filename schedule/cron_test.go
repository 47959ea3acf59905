package schedule

import (
	"testing"
	"time"
)

// Next and Prev in UTC, spec and expected slots side by side. Prev is
// checked by walking back from the last expected slot.
func TestCronNext(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec string
		from string
		want []string
	}{
		{"* * * * *", "2024-01-01T00:00:00Z", []string{"2024-01-01T00:01:00Z", "2024-01-01T00:02:00Z"}},
		{"* * * * *", "2024-01-01T00:00:59.999Z", []string{"2024-01-01T00:01:00Z"}}, // fractions: still strictly after
		{"* * * * * *", "2024-01-01T00:00:00.5Z", []string{"2024-01-01T00:00:01Z", "2024-01-01T00:00:02Z"}},
		{"*/15 * * * *", "2024-01-01T23:50:00Z", []string{"2024-01-02T00:00:00Z", "2024-01-02T00:15:00Z"}},
		{"0 0 * * *", "2024-12-31T00:00:00Z", []string{"2025-01-01T00:00:00Z", "2025-01-02T00:00:00Z"}},
		{"0 0 31 * *", "2024-01-31T00:00:00Z", []string{"2024-03-31T00:00:00Z", "2024-05-31T00:00:00Z", "2024-07-31T00:00:00Z", "2024-08-31T00:00:00Z"}},
		{"0 0 29 2 *", "2024-02-29T00:00:00Z", []string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"0 0 29 2 *", "2096-03-01T00:00:00Z", []string{"2104-02-29T00:00:00Z"}}, // 2100 is not a leap year
		{"0 0 1,15 * MON", "2024-01-01T00:00:00Z", []string{ // either field
			"2024-01-08T00:00:00Z", "2024-01-15T00:00:00Z", "2024-01-22T00:00:00Z", "2024-01-29T00:00:00Z", "2024-02-01T00:00:00Z", "2024-02-05T00:00:00Z"}},
		{"0 0 */2 * MON", "2024-01-01T00:00:00Z", []string{ // both fields: odd days that are Mondays
			"2024-01-15T00:00:00Z", "2024-01-29T00:00:00Z", "2024-02-05T00:00:00Z", "2024-02-19T00:00:00Z"}},
		{"0 0 13 * FRI", "2024-09-01T00:00:00Z", []string{"2024-09-06T00:00:00Z", "2024-09-13T00:00:00Z", "2024-09-20T00:00:00Z"}},
		{"30 4 1-7 * 5", "2024-02-28T00:00:00Z", []string{ // the first seven days, and Fridays
			"2024-03-01T04:30:00Z", "2024-03-02T04:30:00Z", "2024-03-03T04:30:00Z", "2024-03-04T04:30:00Z",
			"2024-03-05T04:30:00Z", "2024-03-06T04:30:00Z", "2024-03-07T04:30:00Z", "2024-03-08T04:30:00Z", "2024-03-15T04:30:00Z"}},
		{"0 12 * JAN-MAR/2 *", "2024-01-31T12:00:00Z", []string{"2024-03-01T12:00:00Z"}},
		{"0 0 * * 7", "2024-01-01T00:00:00Z", []string{"2024-01-07T00:00:00Z", "2024-01-14T00:00:00Z"}},
		{"0 9-17/4 * * MON-FRI", "2024-01-05T12:00:00Z", []string{"2024-01-05T13:00:00Z", "2024-01-05T17:00:00Z", "2024-01-08T09:00:00Z"}},
		{"15,45 30 9 * * *", "2024-01-01T09:30:15Z", []string{"2024-01-01T09:30:45Z", "2024-01-02T09:30:15Z"}},
		{"59 59 23 31 12 *", "2024-06-01T00:00:00Z", []string{"2024-12-31T23:59:59Z", "2025-12-31T23:59:59Z"}},
		{"0 0 1 1 *", "9998-06-01T00:00:00Z", []string{"9999-01-01T00:00:00Z"}}, // then none: the range ends
		{"@yearly", "0001-01-01T00:00:00Z", []string{"0002-01-01T00:00:00Z"}},
		{"* * * * * *", "0001-01-01T00:00:00Z", []string{"0001-01-01T00:00:01Z"}},
	}
	for _, tt := range tests {
		s := mustParse(t, tt.spec, nil)
		got := rfcs(nextN(s, mustTime(t, tt.from), len(tt.want)))
		if d := diffLists(got, tt.want); d != "" {
			t.Errorf("%q Next from %s:%s", tt.spec, tt.from, d)
			continue
		}
		back := rfcs(prevN(s, mustTime(t, tt.want[len(tt.want)-1]), len(tt.want)))
		if d := diffLists(back, reversed(tt.want)); d != "" {
			t.Errorf("%q Prev back from %s:%s", tt.spec, tt.want[len(tt.want)-1], d)
		}
	}
}

func TestCronPrev(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec, at, want string
	}{
		{"*/15 * * * *", "2024-01-01T00:14:59Z", "2024-01-01T00:00:00Z"},
		{"*/15 * * * *", "2024-01-01T00:15:00Z", "2024-01-01T00:15:00Z"}, // at or before
		{"*/15 * * * *", "2024-01-01T00:15:00.999Z", "2024-01-01T00:15:00Z"},
		{"0 0 * * *", "2024-01-01T00:00:00Z", "2024-01-01T00:00:00Z"},
		{"0 0 * * *", "2023-12-31T23:59:59Z", "2023-12-31T00:00:00Z"},
		{"0 0 29 2 *", "2028-02-28T00:00:00Z", "2024-02-29T00:00:00Z"},
		{"0 0 29 2 *", "2104-02-28T00:00:00Z", "2096-02-29T00:00:00Z"},
		{"0 0 1 1 *", "0001-06-01T00:00:00Z", "-"}, // 0001-01-01T00:00:00Z is the zero time: not a slot
		{"0 0 1 1 *", "0002-06-01T00:00:00Z", "0002-01-01T00:00:00Z"},
	}
	for _, tt := range tests {
		s := mustParse(t, tt.spec, nil)
		if got := rfc(s.Prev(mustTime(t, tt.at))); got != tt.want {
			t.Errorf("%q Prev(%s) = %s, want %s", tt.spec, tt.at, got, tt.want)
		}
	}
}

// Beyond the range of slots (years 1 to 9999) both directions return the
// zero time instead of wandering off; times far outside are clamped.
func TestCronRangeEnds(t *testing.T) {
	t.Parallel()
	for _, expr := range []string{"* * * * * *", "0 0 * * *", "@hourly", "@every 1s"} {
		s := mustParse(t, expr, &Options{Location: mustLoc(t, "America/New_York")})
		last := time.Unix(maxSlot, 0)
		if got := s.Next(last); !got.IsZero() {
			t.Errorf("%q Next(%s) = %s, want none", expr, rfc(last), rfc(got))
		}
		if got := s.Next(time.Date(20000, 1, 1, 0, 0, 0, 0, time.UTC)); !got.IsZero() {
			t.Errorf("%q Next(year 20000) = %s, want none", expr, rfc(got))
		}
		if got := s.Prev(time.Date(20000, 1, 1, 0, 0, 0, 0, time.UTC)); got.IsZero() || got.Unix() > maxSlot {
			t.Errorf("%q Prev(year 20000) = %s, want the last slot of year 9999", expr, rfc(got))
		}
		if got := s.Prev(time.Time{}); !got.IsZero() {
			t.Errorf("%q Prev(zero time) = %s, want none", expr, rfc(got))
		}
		if got := s.Prev(time.Date(-5000, 1, 1, 0, 0, 0, 0, time.UTC)); !got.IsZero() {
			t.Errorf("%q Prev(year -5000) = %s, want none", expr, rfc(got))
		}
		if got := s.Next(time.Date(-5000, 1, 1, 0, 0, 0, 0, time.UTC)); got.IsZero() || got.Unix() < minSlot {
			t.Errorf("%q Next(year -5000) = %s, want the first slot of year 1", expr, rfc(got))
		}
	}
}

// The result is in the schedule's zone, whatever zone t is in.
func TestCronResultLocation(t *testing.T) {
	t.Parallel()
	tokyo := mustLoc(t, "Asia/Tokyo")
	s := mustParse(t, "0 9 * * *", &Options{Location: tokyo})
	from := time.Date(2024, 1, 1, 0, 0, 0, 0, mustLoc(t, "America/New_York"))
	got := s.Next(from)
	if got.Location() != tokyo || rfc(got) != "2024-01-02T09:00:00+09:00" {
		t.Errorf("Next = %s in %v, want 2024-01-02T09:00:00+09:00 in Asia/Tokyo", rfc(got), got.Location())
	}
}

// Schedules are immutable: concurrent callers (one per job timer, the
// catch-up pass, the admin API) get the answers a single caller gets. Run
// under -race this also checks that nothing is written.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	s := mustParse(t, "*/7 1-3 * * *", &Options{Location: mustLoc(t, "America/New_York")})
	base := mustTime(t, "2024-11-02T00:00:00Z")
	want := make([]time.Time, 500)
	for i := range want {
		want[i] = s.Next(base.Add(time.Duration(i) * 13 * time.Minute))
	}
	errs := make(chan string, 8)
	for range 8 {
		go func() {
			for i := range want {
				at := base.Add(time.Duration(i) * 13 * time.Minute)
				if got := s.Next(at); !got.Equal(want[i]) {
					errs <- rfc(got) + " != " + rfc(want[i])
					return
				}
				s.Prev(at)
			}
			errs <- ""
		}()
	}
	for range 8 {
		if e := <-errs; e != "" {
			t.Error("concurrent Next:", e)
		}
	}
}
