package schedule

import (
	"testing"
	"time"
)

// yearJob is a spec with the number of slots it must have on each wall date
// of a year: normal on ordinary days, except[date] on the transition days.
type yearJob struct {
	spec   string
	normal int
	except map[string]int
}

// Whole years in zones with awkward transitions. Each row first checks
// that this machine's zone database has the transitions the counts assume,
// then walks Next over the year and Prev back over it.
var yearTests = []struct {
	zone        string
	year        int
	transitions []string // the instants the offset changes during the year
	jobs        []yearJob
}{
	{"America/New_York", 2024, []string{"2024-03-10T07:00:00Z", "2024-11-03T06:00:00Z"}, []yearJob{
		{"0 0 * * *", 1, nil},
		{"7 * * * *", 24, map[string]int{"2024-03-10": 23, "2024-11-03": 25}},
		{"*/15 * * * *", 96, map[string]int{"2024-03-10": 92, "2024-11-03": 100}},
		{"30 2 * * *", 1, nil}, // in the gap: runs at 03:00 EDT
		{"30 1 * * *", 1, nil}, // in the repeat: runs once
		{"0,30 2 * * *", 2, map[string]int{"2024-03-10": 1}},
		{"0 1-2 * * *", 2, nil},                                 // a range is fixed-time: 02:00 runs at 03:00 EDT, 01:00 once
		{"15,45 0-3 * * *", 8, map[string]int{"2024-03-10": 7}}, // 02:15 and 02:45 both at 03:00 EDT
		{"*/30 1 * * *", 2, map[string]int{"2024-11-03": 4}},    // a wildcard: both 01:00s and 01:30s
	}},
	{"America/New_York", 2025, []string{"2025-03-09T07:00:00Z", "2025-11-02T06:00:00Z"}, []yearJob{
		{"0 0 * * *", 1, nil},
		{"7 * * * *", 24, map[string]int{"2025-03-09": 23, "2025-11-02": 25}},
		{"*/15 * * * *", 96, map[string]int{"2025-03-09": 92, "2025-11-02": 100}},
		{"30 2 * * *", 1, nil},
		{"30 1 * * *", 1, nil},
	}},
	{"Europe/London", 2024, []string{"2024-03-31T01:00:00Z", "2024-10-27T01:00:00Z"}, []yearJob{
		{"0 0 * * *", 1, nil},
		{"7 * * * *", 24, map[string]int{"2024-03-31": 23, "2024-10-27": 25}},
		{"*/15 * * * *", 96, map[string]int{"2024-03-31": 92, "2024-10-27": 100}},
		{"30 1 * * *", 1, nil}, // in the gap in March, in the repeat in October
	}},
	{"America/Sao_Paulo", 2018, []string{"2018-02-18T02:00:00Z", "2018-11-04T03:00:00Z"}, []yearJob{
		{"0 0 * * *", 1, nil}, // midnight of 2018-11-04 does not exist: 01:00
		{"7 * * * *", 24, map[string]int{"2018-02-17": 25, "2018-11-04": 23}},
		{"*/15 * * * *", 96, map[string]int{"2018-02-17": 100, "2018-11-04": 92}},
		{"30 0 * * *", 1, nil},
		{"30 23 * * *", 1, nil},
		{"@hourly", 24, map[string]int{"2018-02-17": 25, "2018-11-04": 23}},
	}},
	{"Australia/Lord_Howe", 2024, []string{"2024-04-06T15:00:00Z", "2024-10-05T15:30:00Z"}, []yearJob{
		{"0 0 * * *", 1, nil},
		{"7 * * * *", 24, map[string]int{"2024-10-06": 23}},                      // 02:07 skipped; 01:07 not repeated
		{"45 * * * *", 24, map[string]int{"2024-04-07": 25}},                     // 01:45 repeated; 02:45 not skipped
		{"*/15 * * * *", 96, map[string]int{"2024-04-07": 98, "2024-10-06": 94}}, // half an hour either way
		{"15 2 * * *", 1, nil},
		{"45 1 * * *", 1, nil},
	}},
	{"Pacific/Apia", 2011, []string{"2011-04-02T14:00:00Z", "2011-09-24T14:00:00Z", "2011-12-30T10:00:00Z"}, []yearJob{
		{"0 0 * * *", 1, map[string]int{"2011-12-30": 0}},
		{"0 12 * * *", 1, map[string]int{"2011-12-30": 0}},
		{"7 * * * *", 24, map[string]int{"2011-04-02": 25, "2011-09-24": 23, "2011-12-30": 0}},
		{"*/15 * * * *", 96, map[string]int{"2011-04-02": 100, "2011-09-24": 92, "2011-12-30": 0}},
		{"30 3 * * *", 1, map[string]int{"2011-12-30": 0}}, // repeat in April, gap in September
	}},
}

func TestWholeYears(t *testing.T) {
	t.Parallel()
	for _, db := range zoneDatabases(t) {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel()
			testWholeYears(t, db)
		})
	}
}

func testWholeYears(t *testing.T, db zoneDB) {
	for _, yt := range yearTests {
		loc := db.load(t, yt.zone)
		start := time.Date(yt.year, 1, 1, 0, 0, 0, 0, loc)
		end := time.Date(yt.year+1, 1, 1, 0, 0, 0, 0, loc)

		if got := transitionsBetween(loc, start, end); diffLists(got, yt.transitions) != "" {
			t.Errorf("%s %d: this machine's zone database has other transitions than the test assumes:%s",
				yt.zone, yt.year, diffLists(got, yt.transitions))
			continue
		}
		for _, job := range yt.jobs {
			s := mustParse(t, job.spec, &Options{Location: loc})
			name := yt.zone + " " + job.spec

			var slots []time.Time
			for x := s.Next(start.Add(-time.Nanosecond)); !x.IsZero() && x.Before(end); x = s.Next(x) {
				if len(slots) > 0 && !x.After(slots[len(slots)-1]) {
					t.Fatalf("%s: Next went from %s to %s", name, rfc(slots[len(slots)-1]), rfc(x))
				}
				if x.Nanosecond() != 0 || x.Location() != loc {
					t.Fatalf("%s: slot %s is not a whole second in the zone", name, x)
				}
				slots = append(slots, x)
			}

			// Prev walks the same slots backwards.
			var back []time.Time
			for x := s.Prev(end.Add(-time.Nanosecond)); !x.IsZero() && !x.Before(start); x = s.Prev(x.Add(-time.Nanosecond)) {
				back = append(back, x)
			}
			if d := diffLists(rfcs(reversed(back)), rfcs(slots)); d != "" {
				t.Errorf("%s: Prev over the year disagrees with Next:%s", name, d)
			}

			// Slots per wall date.
			perDay := map[string]int{}
			for _, x := range slots {
				perDay[x.Format(time.DateOnly)]++
			}
			for d := time.Date(yt.year, 1, 1, 0, 0, 0, 0, time.UTC); d.Year() == yt.year; d = d.AddDate(0, 0, 1) {
				date := d.Format(time.DateOnly)
				want, ok := job.except[date]
				if !ok {
					want = job.normal
				}
				if perDay[date] != want {
					t.Errorf("%s: %d slots on %s, want %d", name, perDay[date], date, want)
				}
			}

			// A slot is at one of the job's wall times, except that a
			// fixed-time job's (cronie's rule, read from the text) may
			// have been moved to a transition.
			if c, ok := s.(*cronSchedule); ok {
				wild := cronieWild(t, job.spec)
				for _, x := range slots {
					if !c.spec.matches(civilOf(x.Unix()+offsetAt(loc, x.Unix()))) && (wild || !nearTransition(x, yt.transitions)) {
						t.Errorf("%s: slot %s is not at the job's wall time and no transition explains it", name, rfc(x))
					}
				}
			}
		}
	}
}

// transitionsBetween lists the instants in [from, to) at which loc's offset
// changes, found with the time package alone.
func transitionsBetween(loc *time.Location, from, to time.Time) []string {
	var out []string
	for x := from; x.Before(to); {
		_, end := x.In(loc).ZoneBounds()
		if !end.IsZero() && !end.After(x) {
			// golang/go#81583: on December 31 of a leap year past the
			// listed transitions the end may lie before x.
			end = time.Date(x.UTC().Year()+1, 1, 1, 0, 0, 0, 0, time.UTC)
		}
		if end.IsZero() || !end.Before(to) {
			break
		}
		_, before := end.Add(-time.Second).In(loc).Zone()
		_, after := end.In(loc).Zone()
		if before != after { // a change of name alone (EST to EDT at one offset) is no transition
			out = append(out, end.UTC().Format(time.RFC3339))
		}
		x = end
	}
	return out
}

func nearTransition(x time.Time, transitions []string) bool {
	for _, tr := range transitions {
		tt, _ := time.Parse(time.RFC3339, tr)
		if d := x.Sub(tt); d >= 0 && d < adjustLimit*time.Second {
			return x.Equal(tt) // moved slots land exactly on the transition
		}
	}
	return false
}
