package schedule

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The schedule against the model of cronie's loop (cronie_model_test.go):
// whole years in zones with every kind of clock change, and three days
// around random changes of many zones. The model classifies each spec from
// its text and matches it with its own parser, so these tests hold the
// package to cronie's rule, not to the package's own idea of it.

// cronieSpecs are compared in every zone: lists, ranges and steps in the
// minute and hour fields (all fixed-time jobs for cronie), with wildcards
// for contrast, at the hours where the test zones change their clocks.
// Most match a few times a day: a whole year of slots is walked both ways
// in two zone databases, and the ordinary days only cost time.
var cronieSpecs = []string{
	// The examples of the issue.
	"15,45 0-3 * * *", "0,30 1-3 * * *", "0-59/20 2 * * *", "*/20 2 * * *", "30 */2 * * *",
	"0 9-17 * * *", "* 2 * * *", "0 0 * * *", "30 2 * * *",
	// More fixed-time jobs: single times, lists, ranges and steps, and a
	// list whose first element is a digit although a later one is "*/30".
	"30 1 * * *", "0 1-2 * * *", "45 1-3/2 * * *", "0 2/1 * * 0", "0-59 2 * * 0", "5,*/30 1,2 * * *",
	"30 23 * * *", "0,30 0,23 * * *", "0 3 * * *", "59 1 * * *", "0-15/15 0-3/3 * * *",
	// More wildcard jobs.
	"*/30 1 * * *", "*/20,5 0-3 * * *", "*/45 23 * * *",
	// Day fields: the changes in America and Europe happen on Sundays (0).
	"30 2 * * 0", "30 1 * * 1-5", "0 0-3 1,15 * 0",
	// Descriptors: @hourly is wild, the others fixed.
	"@hourly", "@daily", "@weekly",
	// Six fields: the seconds field does not change the classification.
	"0 30 2 * * *", "*/20 30 2 * * *", "10,20 0 2,3 * * *", "30 */20 2 * * *", "30 15,45 1 * * *",
}

// cronieYears are the zones and years compared whole. Between them they
// have clocks set forward and back by 30 minutes, 1 hour and 2 hours, at
// night and at midnight, in both hemispheres, and a skipped day.
var cronieYears = []struct {
	zone string
	year int
}{
	{"America/New_York", 2024},    // 02:00 -> 03:00 in March, 02:00 -> 01:00 in November
	{"Europe/London", 2024},       // 01:00 -> 02:00, 02:00 -> 01:00
	{"Europe/Berlin", 2024},       // 02:00 -> 03:00, 03:00 -> 02:00
	{"Australia/Sydney", 2024},    // southern hemisphere: back in April, forward in October
	{"Australia/Lord_Howe", 2024}, // half an hour: 02:00 -> 01:30, 02:00 -> 02:30
	{"Pacific/Chatham", 2024},     // +13:45 and +12:45: 03:45 -> 02:45, 02:45 -> 03:45
	{"Antarctica/Troll", 2024},    // two hours: 01:00 -> 03:00, 03:00 -> 01:00
	{"America/Sao_Paulo", 2018},   // at midnight: 00:00 -> 23:00 the day before, 00:00 -> 01:00
	{"Asia/Tehran", 2021},         // at midnight: 00:00 -> 01:00, 00:00 -> 23:00 the day before
	{"Pacific/Apia", 2011},        // 04:00 -> 03:00, 03:00 -> 04:00, and all of 2011-12-30 skipped
}

// Every cron spec above, and 24 random ones, over each whole year in both
// zone databases: the slots that Next finds from the year's start (and Prev
// from its end) are exactly the instants at which cronie runs the job. The
// model runs once per zone, with the default database; the other must
// then have the same clock changes that year.
func TestCronieWholeYears(t *testing.T) {
	t.Parallel()
	specs := append(slices.Clone(cronieSpecs), randomCronieSpecs(t, rand.New(rand.NewPCG(21, 22)), 24)...)
	for _, zy := range cronieYears {
		t.Run(zy.zone, func(t *testing.T) {
			t.Parallel()
			loc := mustLoc(t, zy.zone)
			from := time.Date(zy.year, 1, 1, 0, 0, 0, 0, loc)
			to := time.Date(zy.year+1, 1, 1, 0, 0, 0, 0, loc)
			changes := cronieChanges(t, loc, from, to)
			if len(changes) < 2 {
				t.Fatalf("%s has %d clock changes in %d on this zone database; the test needs them", zy.zone, len(changes), zy.year)
			}
			runs := cronieRunsBetween(t, loc, specs, from.Unix(), to.Unix())
			for _, db := range zoneDatabases(t) {
				dbLoc := db.load(t, zy.zone)
				if d := diffLists(cronieChanges(t, dbLoc, from, to), changes); d != "" {
					t.Errorf("%s %d: the %s zone database has other clock changes:%s", zy.zone, zy.year, db.name, d)
					continue
				}
				compareWithCronie(t, dbLoc, specs, runs, from.Unix(), to.Unix())
			}
		})
	}
}

// Random specs around random clock changes of 16 zones, 1980-2037.
func TestCronieRandomTransitions(t *testing.T) {
	t.Parallel()
	zones := []string{
		"America/New_York", "Europe/London", "America/Sao_Paulo", "Australia/Lord_Howe", "Pacific/Apia",
		"Pacific/Chatham", "America/St_Johns", "Europe/Dublin", "Africa/Casablanca", "Antarctica/Troll",
		"Asia/Tehran", "America/Havana", "Australia/Adelaide", "America/Santiago", "Asia/Gaza", "UTC",
	}
	r := rand.New(rand.NewPCG(13, 14))
	rounds := 80
	if testing.Short() {
		rounds = 20
	}
	for range rounds {
		loc := mustLoc(t, zones[r.IntN(len(zones))])
		at := randomTransition(r, loc)
		specs := randomCronieSpecs(t, r, 8)
		from, to := at-36*3600, at+36*3600
		compareWithCronie(t, loc, specs, cronieRunsBetween(t, loc, specs, from, to), from, to)
	}
}

// cronieRunsBetween returns the instants in [from, to) at which the model
// runs each spec in loc. It starts a day early so that its virtual clock
// is settled by from.
func cronieRunsBetween(t *testing.T, loc *time.Location, specs []string, from, to int64) [][]int64 {
	t.Helper()
	jobs := make([]*cronieJob, len(specs))
	for i, s := range specs {
		jobs[i] = newCronieJob(t, s)
	}
	runs := cronieLoop(loc, jobs, from-floorMod(from, 60)-24*3600, to)
	for i := range runs {
		runs[i] = slices.DeleteFunc(runs[i], func(x int64) bool { return x < from || x >= to })
	}
	return runs
}

// compareWithCronie checks that each spec's slots in [from, to) in loc,
// following Next and Prev, are the model's runs.
func compareWithCronie(t *testing.T, loc *time.Location, specs []string, runs [][]int64, from, to int64) {
	t.Helper()
	for i, spec := range specs {
		got := slotsBetween(t, mustParse(t, spec, &Options{Location: loc}), from, to)
		kind := "fixed-time"
		if cronieWild(t, spec) {
			kind = "wildcard"
		}
		if d := diffInstants(got, runs[i], loc); d != "" {
			t.Errorf("%s %q (a %s job for cronie) on [%s, %s) (got: the schedule, want: cronie):%s", loc, spec, kind,
				time.Unix(from, 0).In(loc).Format(time.RFC3339), time.Unix(to, 0).In(loc).Format(time.RFC3339), d)
		}
	}
}

// slotsBetween lists a schedule's slots in [from, to) by following Next,
// and checks that Prev lists the same ones backwards.
func slotsBetween(t *testing.T, s Schedule, from, to int64) []int64 {
	t.Helper()
	var fwd []int64
	for x := s.Next(time.Unix(from-1, 0)); !x.IsZero() && x.Unix() < to; x = s.Next(x) {
		fwd = append(fwd, x.Unix())
	}
	var bwd []int64
	for x := s.Prev(time.Unix(to-1, 0)); !x.IsZero() && x.Unix() >= from; x = s.Prev(x.Add(-time.Second)) {
		bwd = append(bwd, x.Unix())
	}
	if d := diffInstants(reversed(bwd), fwd, locationOf(s)); d != "" {
		t.Errorf("%q: Prev and Next disagree on [%s, %s) (got: Prev, want: Next):%s", s, timeUnixUTC(from), timeUnixUTC(to), d)
	}
	return fwd
}

// diffInstants describes the first few instants in only one of two sorted
// lists, or returns "".
func diffInstants(got, want []int64, loc *time.Location) string {
	var b strings.Builder
	n := 0
	note := func(which string, x int64) {
		if n++; n <= 8 {
			fmt.Fprintf(&b, "\n  %s %s", which, time.Unix(x, 0).In(loc).Format(time.RFC3339))
		}
	}
	i, j := 0, 0
	for i < len(got) || j < len(want) {
		switch {
		case j == len(want) || i < len(got) && got[i] < want[j]:
			note("extra  ", got[i])
			i++
		case i == len(got) || want[j] < got[i]:
			note("missing", want[j])
			j++
		default:
			i, j = i+1, j+1
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%s\n  (%d differences; %d slots, %d wanted)", b.String(), n, len(got), len(want))
}

// cronieChanges lists loc's clock changes in [from, to), failing the test
// if one is of a kind the model cannot step over minute by minute (not on
// a whole minute) or one where the package departs from cronie on purpose
// (doc.go): a backward jump of over 3 hours, which cronie treats as a reset
// and reruns fixed-time jobs after, and a forward jump of 4 minutes or
// less, whose skipped minutes cronie runs for wildcard jobs too.
func cronieChanges(t *testing.T, loc *time.Location, from, to time.Time) []string {
	t.Helper()
	changes := transitionsBetween(loc, from, to)
	for _, c := range changes {
		at := mustTime(t, c)
		if reason := cronieUnlike(loc, at); reason != "" {
			t.Fatalf("%s changes its clock at %s: %s", loc, c, reason)
		}
	}
	return changes
}

// cronieUnlike says why the model and the package would part at a change
// of loc's offset at instant at, or returns "".
func cronieUnlike(loc *time.Location, at time.Time) string {
	_, before := at.Add(-time.Second).In(loc).Zone()
	_, after := at.In(loc).Zone()
	jump := after - before
	switch {
	case at.Unix()%60 != 0 || before%60 != 0 || after%60 != 0:
		return "not on a whole minute"
	case jump < -3*3600:
		return fmt.Sprintf("back by %v, over cronie's 3 hours", time.Duration(-jump)*time.Second)
	case jump > 0 && jump <= 4*60:
		return fmt.Sprintf("forward by only %v, cronie's small case", time.Duration(jump)*time.Second)
	}
	return ""
}

// randomTransition picks a change of loc's clock between 1980 and 2037
// that the model and the package treat alike (see cronieUnlike), or a
// random whole minute for a zone without one.
func randomTransition(r *rand.Rand, loc *time.Location) int64 {
	lo, hi := time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), time.Date(2037, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	for range 1000 {
		x := lo + r.Int64N(hi-lo)
		_, end := time.Unix(x, 0).In(loc).ZoneBounds()
		if end.IsZero() {
			break
		}
		_, before := end.Add(-time.Second).In(loc).Zone()
		_, after := end.In(loc).Zone()
		if before != after && cronieUnlike(loc, end) == "" {
			return end.Unix()
		}
	}
	x := lo + r.Int64N(hi-lo)
	return x - x%60
}

// randomCronieSpecs writes n random specs whose minute and hour fields mix
// single values, lists, ranges, steps and wildcards, leaning towards the
// minutes and hours at which the test zones change their clocks so that
// many have appointments in the gaps and repeats. One in five has a
// seconds field. Specs matching more than 4 minutes a day are dropped:
// they would only make the test slower.
func randomCronieSpecs(t testing.TB, r *rand.Rand, n int) []string {
	days := []string{"* * *", "* * *", "* * *", "* * 0", "* * 1-5", "1,15 * *", "*/2 * 0", "1-7 * 0", "* 3,4,9,10,11 *"}
	seconds := []string{"0", "30", "*/20", "15,45", "0-59/30", "10-12"}
	var out []string
	for len(out) < n {
		spec := randomCronieField(r, 59, []int{0, 15, 30, 45, 59}) + " " +
			randomCronieField(r, 23, []int{0, 1, 2, 3, 23}) + " " + days[r.IntN(len(days))]
		if r.IntN(5) == 0 {
			spec = seconds[r.IntN(len(seconds))] + " " + spec
		}
		j := newCronieJob(t, spec)
		perDay := 0
		for h := range j.hour {
			for m := range j.minute {
				if j.hour[h] && j.minute[m] {
					perDay++
				}
			}
		}
		if perDay <= 4 {
			out = append(out, spec)
		}
	}
	return out
}

func randomCronieField(r *rand.Rand, maxValue int, hot []int) string {
	val := func() int {
		if r.IntN(3) > 0 {
			return hot[r.IntN(len(hot))]
		}
		return r.IntN(maxValue + 1)
	}
	step := func() int { return 1 + r.IntN(maxValue/4+1) }
	elem := func() string {
		switch r.IntN(8) {
		case 0, 1, 2:
			return strconv.Itoa(val())
		case 3, 4:
			a, b := val(), val()
			if a > b {
				a, b = b, a
			}
			if r.IntN(2) == 0 {
				return fmt.Sprintf("%d-%d", a, b)
			}
			return fmt.Sprintf("%d-%d/%d", a, b, step())
		case 5:
			return fmt.Sprintf("%d/%d", val(), step())
		case 6:
			return fmt.Sprintf("*/%d", step())
		default:
			return "*"
		}
	}
	elems := []string{elem()}
	if r.IntN(3) == 0 {
		for range 1 + r.IntN(2) {
			elems = append(elems, elem())
		}
	}
	return strings.Join(elems, ",")
}
