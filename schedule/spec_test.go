package schedule

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// mustSpec parses the fields of a cron expression (five or six, or a
// descriptor; no zone prefix) into the pattern the search walks, including one
// Parse refuses because no day ever matches.
func mustSpec(t testing.TB, expr string) *spec {
	t.Helper()
	s, err := specOf(expr)
	if err != nil {
		t.Fatalf("%q: %v", expr, err)
	}
	return s
}

func specOf(expr string) (*spec, error) {
	if d, ok := descriptors[expr]; ok {
		expr = d
	}
	words := strings.Fields(expr)
	if len(words) == 5 {
		words = append([]string{"0"}, words...)
	}
	if len(words) != 6 {
		return nil, fmt.Errorf("%d fields, want 5 or 6", len(words))
	}
	return parseFields([6]string(words))
}

// Fixed-time or wildcard, cronie's rule (src/entry.c sets MIN_STAR and
// HR_STAR, src/cron.c runs a job as a wildcard job iff either is set): a
// job is a wildcard job exactly when its minute or its hour field is
// written starting with "*". Lists, ranges and steps that do not start
// with "*" are fixed-time, and the seconds field plays no part.
func TestFixedTimeIsCronie(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec  string
		fixed bool
	}{
		{"30 2 * * *", true},
		{"0,30 2,3 * * *", true},
		{"15,45 0-3 * * *", true},
		{"0 9-17 * * *", true},
		{"0-59/15 2 * * *", true},
		{"0 2/1 * * *", true}, // 2-23, but not written with "*"
		{"5,*/30 1 * * *", true},
		{"0 0 * * *", true},
		{"* 2 * * *", false},
		{"*/20 2 * * *", false},
		{"30 */2 * * *", false},
		{"*/30,5 1 * * *", false},
		{"7 * * * *", false},
		{"*/15 * * * *", false},
		// The day fields do not matter.
		{"0 0 */2 * *", true},
		{"0 0 * * 1-5", true},
		// Six fields: minute and hour decide, as for cronie, which has no seconds.
		{"*/20 30 2 * * *", true},
		{"* 30 2 * * *", true},
		{"0 * 2 * * *", false},
		{"0 0 * * * *", false},
		// Descriptors, as cronie spells them out: @hourly is "0 * * * *".
		{"@hourly", false},
		{"@daily", true},
		{"@midnight", true},
		{"@weekly", true},
		{"@monthly", true},
		{"@yearly", true},
		{"@annually", true},
	}
	for _, tt := range tests {
		if got := mustSpec(t, tt.spec).fixed; got != tt.fixed {
			t.Errorf("%q: fixed-time = %v, want %v", tt.spec, got, tt.fixed)
		}
	}
}

// The day-of-month / day-of-week rule, exactly as Vixie cron: if either
// field starts with "*", a day must match both; otherwise either will do.
func TestDayRuleIsVixie(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec string
		date string // 2024-01-01 is a Monday
		want bool
	}{
		// Both restricted: either matches.
		{"0 0 1,15 * MON", "2024-01-01", true},  // the 1st, and a Monday
		{"0 0 1,15 * MON", "2024-01-08", true},  // a Monday
		{"0 0 1,15 * MON", "2024-02-15", true},  // the 15th, a Thursday
		{"0 0 1,15 * MON", "2024-01-09", false}, // neither
		{"0 0 13 * FRI", "2024-09-13", true},    // Friday the 13th
		{"0 0 13 * FRI", "2024-09-06", true},    // any Friday: not "Friday the 13th only"
		{"0 0 13 * FRI", "2024-10-13", true},    // the 13th, a Sunday
		// Day of week "*": the day of the month alone decides.
		{"0 0 1,15 * *", "2024-01-15", true},
		{"0 0 1,15 * *", "2024-01-08", false},
		// Day of month "*": the day of the week alone decides.
		{"0 0 * * MON", "2024-01-08", true},
		{"0 0 * * MON", "2024-01-09", false},
		{"0 0 ? * MON", "2024-01-09", false},
		// Starred with a step still counts as a star: both must match.
		{"0 0 */2 * MON", "2024-01-01", true},  // odd day and Monday
		{"0 0 */2 * MON", "2024-01-08", false}, // Monday but even day
		{"0 0 */2 * MON", "2024-01-03", false}, // odd day but Wednesday
		{"0 0 1 * */2", "2024-01-01", false},   // the 1st, but Monday is not in 0,2,4,6
		{"0 0 1 * */2", "2024-09-01", true},    // the 1st and a Sunday
		// A range is a restriction, even when it covers everything.
		{"0 0 1-31 * MON", "2024-01-09", true},
		{"0 0 1 * 0-6", "2024-01-09", true},
		// Month always applies.
		{"0 0 1,15 FEB MON", "2024-01-08", false},
		{"0 0 1,15 FEB MON", "2024-02-05", true},
		// 7 is Sunday.
		{"0 0 * * 7", "2024-01-07", true},
		{"0 0 * * 0", "2024-01-07", true},
	}
	for _, tt := range tests {
		s := mustSpec(t, tt.spec)
		c := civilOf(mustTime(t, tt.date+"T00:00:00Z").Unix())
		if got := s.dayMatches(c); got != tt.want {
			t.Errorf("%q on %s (weekday %d) = %v, want %v", tt.spec, tt.date, c.weekday, got, tt.want)
		}
	}
}

// dayMask, the search's fast path, agrees with dayMatches on every day.
func TestDayMaskAgreesWithDayMatches(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		expr := randomSpec(r, false)
		s := mustSpec(t, expr)
		for y := 1999; y <= 2030; y++ {
			for m := 1; m <= 12; m++ {
				mask := s.dayMask(y, m)
				for d := 1; d <= 31; d++ {
					want := d <= daysIn(y, m) && s.dayMatches(civilOf(wallSecond(y, m, d, 0, 0, 0)))
					if got := mask.has(d); got != want {
						t.Fatalf("%q: dayMask(%d, %d) has day %d = %v, want %v", expr, y, m, d, got, want)
					}
				}
			}
		}
	}
}

func TestSatisfiable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec string
		want bool
	}{
		{"0 0 * * *", true},
		{"0 0 30 2 *", false},
		{"0 0 31 4,6,9,11 *", false},
		{"0 0 30,31 2 *", false},
		{"0 0 29 2 *", true}, // leap years
		{"0 0 31 4,5 *", true},
		{"0 0 30 2 MON", true},  // both restricted: any Monday in February
		{"0 0 30 2 */2", false}, // starred: the 30th and a Sunday-ish day, never in February
		{"0 0 29 2 */7", true},  // February 29 on a Sunday (2032)
	}
	for _, tt := range tests {
		if got := mustSpec(t, tt.spec).neverDays() == ""; got != tt.want {
			t.Errorf("%q satisfiable = %v, want %v", tt.spec, got, tt.want)
		}
	}
}

// neverDays finds no reason exactly when a search of a full 400-year
// cycle finds a match.
func TestSatisfiableAgreesWithSearch(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		expr := randomSpec(r, false)
		s := mustSpec(t, expr)
		_, found := s.nextWall(wallSecond(2000, 1, 1, 0, 0, 0))
		if why := s.neverDays(); found != (why == "") {
			t.Fatalf("%q: neverDays() = %q but nextWall found = %v", expr, why, found)
		}
	}
}
