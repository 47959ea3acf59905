package schedule

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// This file is an oracle for the daylight-saving tests: a model of
// cronie's main loop (src/cron.c), written from cronie's source and not
// from this package. It reads a spec's text itself, classifies the job as
// cronie's src/entry.c does, matches the fields with its own small parser,
// and steps real time one minute at a time, asking the time package for
// nothing but each minute's UTC offset. It never calls Parse, Next, Prev
// or anything of the package's spec, so an expectation drawn from it does
// not depend on how the package classifies or searches.

// cronieJob is one spec as cronie reads it.
type cronieJob struct {
	text string

	// wild is cronie's MIN_STAR|HR_STAR: the minute or the hour field is
	// written starting with "*". find_jobs runs a job as a wildcard job
	// exactly then; every other job is a fixed-time job.
	wild bool

	// The fields' values. seconds is {0} for a five-field spec: cronie
	// has no seconds; the package's sixth field only says at which
	// seconds of a minute in which cronie runs the job it runs.
	seconds                  []int64
	minute, hour, dom, month []bool
	dow                      []bool // 0-6, Sunday 0 (7 is folded into 0)

	// domStar and dowStar are cronie's DOM_STAR and DOW_STAR.
	domStar, dowStar bool

	// A one-day cache of the day rule; wall days come in order.
	day   int64
	dayOK bool
}

// cronieDescriptors are the @-names as cronie's entry.c spells them out.
// @hourly sets HR_STAR, so it is a wildcard job; the others are not.
var cronieDescriptors = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
	"@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
	"@hourly": "0 * * * *",
}

// cronieWild reports whether cronie runs spec as a wildcard job, read from
// its text alone. A CRON_TZ= prefix is not accepted: the callers pass the
// zone separately.
func cronieWild(t testing.TB, spec string) bool {
	return newCronieJob(t, spec).wild
}

// newCronieJob reads a five- or six-field spec or a descriptor written with
// numbers, "*", ranges, steps and lists (no names, no "?").
func newCronieJob(t testing.TB, spec string) *cronieJob {
	t.Helper()
	text := spec
	if d, ok := cronieDescriptors[spec]; ok {
		text = d
	}
	words := strings.Fields(text)
	if len(words) == 5 {
		words = append([]string{"0"}, words...)
	}
	if len(words) != 6 {
		t.Fatalf("cronie model: %q has %d fields", spec, len(words))
	}
	j := &cronieJob{text: spec, day: -1 << 62}
	for s, ok := range cronieField(t, words[0], 0, 59, 59) {
		if ok {
			j.seconds = append(j.seconds, int64(s))
		}
	}
	j.minute = cronieField(t, words[1], 0, 59, 59)
	j.hour = cronieField(t, words[2], 0, 23, 23)
	j.dom = cronieField(t, words[3], 1, 31, 31)
	j.month = cronieField(t, words[4], 1, 12, 12)
	j.dow = cronieField(t, words[5], 0, 7, 6)
	if j.dow[7] {
		j.dow[0] = true
	}
	j.dow = j.dow[:7]
	j.wild = strings.HasPrefix(words[1], "*") || strings.HasPrefix(words[2], "*")
	j.domStar = strings.HasPrefix(words[3], "*")
	j.dowStar = strings.HasPrefix(words[5], "*")
	return j
}

// cronieField parses one field into a table indexed by value. "*" and
// "a/n" run to starMax (6 for the day of the week, where 7 is only an alias
// of Sunday).
func cronieField(t testing.TB, text string, lo, hi, starMax int) []bool {
	t.Helper()
	set := make([]bool, hi+1)
	num := func(s string) int {
		n, err := strconv.Atoi(s)
		if err != nil || n < lo || n > hi {
			t.Fatalf("cronie model: bad value %q in %q", s, text)
		}
		return n
	}
	for elem := range strings.SplitSeq(text, ",") {
		base, stepText, hasStep := strings.Cut(elem, "/")
		step := 1
		if hasStep {
			step = num(stepText)
		}
		var a, b int
		if base == "*" {
			a, b = lo, starMax
		} else if first, last, isRange := strings.Cut(base, "-"); isRange {
			a, b = num(first), num(last)
		} else {
			a, b = num(base), num(base)
			if hasStep {
				b = starMax
			}
		}
		for v := a; v <= b; v += step {
			set[v] = true
		}
	}
	return set
}

// matches reports whether the job matches wall minute v (minutes since the
// epoch of wall time, cronie's virtualTime), as find_jobs matches
// gmtime(v*60): minute, hour and month, and Vixie's day rule.
func (j *cronieJob) matches(v int64) bool {
	day := floorDiv(v, 24*60)
	if day != j.day {
		c := time.Unix(day*24*3600, 0).UTC()
		dom, dow := j.dom[c.Day()], j.dow[c.Weekday()]
		j.day = day
		if j.domStar || j.dowStar {
			j.dayOK = dom && dow
		} else {
			j.dayOK = dom || dow
		}
		j.dayOK = j.dayOK && j.month[c.Month()]
	}
	m := v - day*24*60
	return j.dayOK && j.hour[m/60] && j.minute[m%60]
}

// cronieLoop plays cronie's main loop in loc over the real minutes of
// [from, to) (Unix seconds, whole minutes) and returns, for each job, the
// instants at which it runs, in order. The loop, as in src/cron.c, where
// timeRunning is the wall-clock minute now and virtualTime the last wall
// minute whose jobs were run:
//
//	timeDiff == 1                 normal: run every job matching timeRunning
//	5 < timeDiff <= 180           medium (clock set forward): run the
//	                              wildcard jobs matching timeRunning, then
//	                              the fixed-time jobs matching each minute
//	                              after virtualTime up to timeRunning, all now
//	0 < timeDiff <= 5             small (woke late): every job of each minute
//	                              after virtualTime up to timeRunning, now
//	-180 <= timeDiff <= 0         negative (clock set back): only the wildcard
//	                              jobs matching timeRunning; virtualTime stays
//	otherwise                     large: virtualTime = timeRunning, run every
//	                              job matching it
//
// A job run for a skipped minute runs at the current instant x; a job run
// for the current minute runs at x plus each second its seconds field
// names. Several runs at one instant are one slot. The model assumes, as
// the package does, that the catch-up loops finish within their minute,
// and it runs the loop in the job's zone: cronie keeps its clocks in the
// daemon's zone, so this is cronie on a machine set to that zone.
func cronieLoop(loc *time.Location, jobs []*cronieJob, from, to int64) [][]int64 {
	runs := make([][]int64, len(jobs))
	// byMinute[m] lists the jobs whose minute and hour fields match minute
	// m of the day, so that each minute looks only at those (matches
	// checks them in full): the loop runs for whole years.
	var byMinute [24 * 60][]int
	for i, j := range jobs {
		for m := range byMinute {
			if j.hour[m/60] && j.minute[m%60] {
				byMinute[m] = append(byMinute[m], i)
			}
		}
	}
	var virtual int64
	for x := from; x < to; x += 60 {
		_, off := time.Unix(x, 0).In(loc).Zone()
		running := floorDiv(x+int64(off), 60)
		if x == from {
			virtual = running - 1
		}
		find := func(v int64, doWild, doFixed bool) {
			for _, i := range byMinute[floorMod(v, 24*60)] {
				if j := jobs[i]; (j.wild && doWild || !j.wild && doFixed) && j.matches(v) {
					if v != running {
						runs[i] = append(runs[i], x)
						continue
					}
					for _, s := range j.seconds {
						runs[i] = append(runs[i], x+s)
					}
				}
			}
		}
		switch diff := running - virtual; {
		case diff == 1:
			virtual = running
			find(running, true, true)
		case diff > 180 || diff < -180:
			virtual = running
			find(running, true, true)
		case diff > 5:
			find(running, true, false)
			for virtual < running {
				virtual++
				find(virtual, false, true)
			}
		case diff > 0:
			for virtual < running {
				virtual++
				find(virtual, true, true)
			}
		default:
			find(running, true, false)
		}
	}
	for i := range runs {
		slices.Sort(runs[i])
		runs[i] = slices.Compact(runs[i])
	}
	return runs
}

// The model itself, on cases whose answer is known from cronie's source
// and its documentation, so that agreeing with it means something.
func TestCronieModel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		zone, spec string
		from, to   string
		want       []string
	}{
		// Spring forward: a fixed-time job in the gap runs at the change; a
		// wildcard job's skipped minutes do not run.
		{"America/New_York", "30 2 * * *", "2024-03-10T00:00:00-05:00", "2024-03-10T12:00:00-04:00",
			[]string{"2024-03-10T03:00:00-04:00"}},
		{"America/New_York", "*/20 2 * * *", "2024-03-10T00:00:00-05:00", "2024-03-10T12:00:00-04:00", nil},
		{"America/New_York", "0-59/20 2 * * *", "2024-03-10T00:00:00-05:00", "2024-03-10T12:00:00-04:00",
			[]string{"2024-03-10T03:00:00-04:00"}},
		// Fall back: a fixed-time job runs once, a wildcard job twice.
		{"America/New_York", "30 1 * * *", "2024-11-03T00:00:00-04:00", "2024-11-03T12:00:00-05:00",
			[]string{"2024-11-03T01:30:00-04:00"}},
		{"America/New_York", "30 */2 * * *", "2024-11-03T00:00:00-04:00", "2024-11-03T03:00:00-05:00",
			[]string{"2024-11-03T00:30:00-04:00", "2024-11-03T02:30:00-05:00"}},
		{"America/New_York", "30 1-3/2 * * *", "2024-11-03T00:00:00-04:00", "2024-11-03T04:00:00-05:00",
			[]string{"2024-11-03T01:30:00-04:00", "2024-11-03T03:30:00-05:00"}},
		{"America/New_York", "30 * * * *", "2024-11-03T00:00:00-04:00", "2024-11-03T02:00:00-05:00",
			[]string{"2024-11-03T00:30:00-04:00", "2024-11-03T01:30:00-04:00", "2024-11-03T01:30:00-05:00"}},
		// The text decides: "5,*/30" starts with a digit, so it is fixed.
		{"America/New_York", "5,*/30 1 * * *", "2024-11-03T00:00:00-04:00", "2024-11-03T03:00:00-05:00",
			[]string{"2024-11-03T01:00:00-04:00", "2024-11-03T01:05:00-04:00", "2024-11-03T01:30:00-04:00"}},
		// A seconds field does not make a job wild: these all run at the change.
		{"America/New_York", "*/20 30 2 * * *", "2024-03-10T00:00:00-05:00", "2024-03-10T12:00:00-04:00",
			[]string{"2024-03-10T03:00:00-04:00"}},
		{"America/New_York", "10,20 0 2,3 * * *", "2024-03-10T00:00:00-05:00", "2024-03-10T12:00:00-04:00",
			[]string{"2024-03-10T03:00:00-04:00", "2024-03-10T03:00:10-04:00", "2024-03-10T03:00:20-04:00"}},
		// A jump of a day is cronie's "large" case: the appointments are lost.
		{"Pacific/Apia", "0 12 * * *", "2011-12-29T13:00:00-10:00", "2011-12-31T13:00:00+14:00",
			[]string{"2011-12-31T12:00:00+14:00"}},
	}
	for _, tt := range tests {
		loc := mustLoc(t, tt.zone)
		from, to := mustTime(t, tt.from).Unix(), mustTime(t, tt.to).Unix()
		got := fmtUnixes(cronieLoop(loc, []*cronieJob{newCronieJob(t, tt.spec)}, from-24*3600, to)[0], from, loc)
		if d := diffLists(got, tt.want); d != "" {
			t.Errorf("%s %q:%s", tt.zone, tt.spec, d)
		}
	}
	for spec, wild := range map[string]bool{
		"@hourly": true, "@daily": false, "@weekly": false, "@monthly": false, "@yearly": false,
		"0 9-17 * * *": false, "0-59/15 2 * * *": false, "*/15 2 * * *": true, "0 */2 * * *": true,
		"* 2 * * *": true, "*/5 30 2 * * *": false, "0 * 2 * * *": true,
	} {
		if got := cronieWild(t, spec); got != wild {
			t.Errorf("cronieWild(%q) = %v, want %v", spec, got, wild)
		}
	}
}

// fmtUnixes formats the instants at or after from in loc.
func fmtUnixes(xs []int64, from int64, loc *time.Location) []string {
	var out []string
	for _, x := range xs {
		if x >= from {
			out = append(out, time.Unix(x, 0).In(loc).Format(time.RFC3339))
		}
	}
	return out
}
