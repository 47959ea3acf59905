package schedule

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// cronieRuns is an oracle written independently of Next and Prev: it plays
// cronie's main loop (src/cron.c) over real time from `from` to `to`, one
// tick every `step` seconds, and records when each spec would run. Like
// cronie it keeps a virtual wall clock that never goes backwards:
//
//   - the wall clock advanced one tick: run what matches it;
//   - it jumped forward by less than 3 hours: run the wildcard jobs
//     matching the new time, and the fixed-time jobs matching any skipped
//     wall time or the new one, now (cronie's "medium" case);
//   - it jumped further: run what matches the new time (the "large" case);
//   - it went backwards: run only the wildcard jobs, until the wall clock
//     passes the virtual one again (the "negative" case).
//
// It differs from cronie where the package documents that it does: which
// jobs count as wildcard, and a backward jump of over 3 hours. It knows
// nothing of zone periods; it only asks the time package for each tick's
// offset and wall time.
func cronieRuns(loc *time.Location, specs []*spec, from, to, step int64) [][]int64 {
	runs := make([][]int64, len(specs))
	run := func(i int, x int64) {
		if n := len(runs[i]); n == 0 || runs[i][n-1] != x {
			runs[i] = append(runs[i], x)
		}
	}
	civil := func(wall int64) civilTime {
		c := time.Unix(wall, 0).UTC()
		return civilTime{c.Year(), int(c.Month()), c.Day(), c.Hour(), c.Minute(), c.Second(), int(c.Weekday())}
	}
	var virtual int64
	for x := from; x < to; x += step {
		_, off := time.Unix(x, 0).In(loc).Zone()
		w := x + int64(off)
		if x == from {
			virtual = w - step
		}
		now := civil(w)
		diff := w - virtual
		for i, s := range specs {
			wild := !s.fixed
			switch {
			case diff == step:
				if s.matches(now) {
					run(i, x)
				}
			case diff > step && diff-step < 180*60: // cronie: timeDiff <= 180 minutes
				if wild && s.matches(now) {
					run(i, x)
				}
				if !wild {
					for v := virtual + step; v <= w; v += step {
						if s.matches(civil(v)) {
							run(i, x)
							break
						}
					}
				}
			case diff > step:
				if s.matches(now) {
					run(i, x)
				}
			default:
				if wild && s.matches(now) {
					run(i, x)
				}
			}
		}
		if diff > 0 {
			virtual = w
		}
	}
	return runs
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
	if fmt.Sprint(fwd) != fmt.Sprint(reversed(bwd)) {
		t.Errorf("%q: Next and Prev disagree on [%s, %s):\n next %v\n prev %v", s, timeUnixUTC(from), timeUnixUTC(to), fwd, reversed(bwd))
	}
	return fwd
}

// compareWithCronie checks specs against the oracle on [from, to). The
// oracle starts warm-up ticks earlier so its virtual clock is settled.
func compareWithCronie(t *testing.T, loc *time.Location, exprs []string, from, to, step int64) {
	t.Helper()
	from -= floorMod(from, step) // the oracle ticks on whole steps
	specs := make([]*spec, len(exprs))
	scheds := make([]Schedule, len(exprs))
	for i, e := range exprs {
		scheds[i] = mustParse(t, e, &Options{Location: loc})
		specs[i] = scheds[i].(*cronSchedule).spec
	}
	warm := from - 24*3600
	all := cronieRuns(loc, specs, warm, to, step)
	for i, e := range exprs {
		var want []int64
		for _, x := range all[i] {
			if x >= from {
				want = append(want, x)
			}
		}
		got := slotsBetween(t, scheds[i], from, to)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s %q on [%s, %s):\n slots  %s\n cronie %s", loc, e,
				timeUnixUTC(from).In(loc), timeUnixUTC(to).In(loc), fmtUnix(got, loc), fmtUnix(want, loc))
		}
	}
}

func fmtUnix(xs []int64, loc *time.Location) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = time.Unix(x, 0).In(loc).Format(time.RFC3339)
	}
	return fmt.Sprint(out)
}

// The specs of the hand-written tables, around every transition of the
// whole-year zones, agree with the oracle.
func TestCronieOracleAtTransitions(t *testing.T) {
	t.Parallel()
	exprs := []string{
		"0 0 * * *", "0 12 * * *", "7 * * * *", "45 * * * *", "*/15 * * * *", "*/20 2 * * *",
		"30 2 * * *", "30 1 * * *", "0 2 * * *", "0 1 * * *", "59 1 * * *", "0 3 * * *", "30 0 * * *",
		"30 23 * * *", "15 2 * * *", "45 1 * * *", "30 3 * * *", "0,30 2 * * *", "30 2,3 * * *",
		"0,15,30 2 * * *", "30 1-3 * * *", "0 1-2 * * *", "*/30 1 * * *", "@hourly", "@daily",
		"0 0 4 11 *", "0 0 1,15 * SUN", "0 0 */2 * SUN",
	}
	for _, db := range zoneDatabases(t) {
		for _, yt := range yearTests {
			loc := db.load(t, yt.zone)
			for _, tr := range yt.transitions {
				at := mustTime(t, tr).Unix()
				compareWithCronie(t, loc, exprs, at-36*3600, at+36*3600, 60)
			}
		}
	}
}

// Random specs in random zones around random transitions agree with the
// oracle. Minute-resolution specs are checked over three days, specs with a
// seconds field over a few hours tick by tick.
func TestCronieOracleRandom(t *testing.T) {
	t.Parallel()
	zones := []string{
		"America/New_York", "Europe/London", "America/Sao_Paulo", "Australia/Lord_Howe", "Pacific/Apia",
		"Pacific/Chatham", "America/St_Johns", "Europe/Dublin", "Africa/Casablanca", "Antarctica/Troll",
		"Asia/Tehran", "America/Havana", "Australia/Adelaide", "America/Santiago", "Asia/Gaza", "UTC",
	}
	r := rand.New(rand.NewPCG(13, 14))
	rounds := 60
	if testing.Short() {
		rounds = 15
	}
	for range rounds {
		loc := mustLoc(t, zones[r.IntN(len(zones))])
		at := randomTransition(r, loc)
		withSeconds := r.IntN(3) == 0
		var exprs []string
		for range 6 {
			exprs = append(exprs, timeOfDaySpec(r, withSeconds))
		}
		if withSeconds {
			compareWithCronie(t, loc, exprs, at-3*3600, at+3*3600, 1)
		} else {
			compareWithCronie(t, loc, exprs, at-36*3600, at+36*3600, 60)
		}
	}
}

// randomTransition picks a transition of loc between 1980 and 2037 (or a
// random instant for a zone without any), whose offsets are whole minutes.
func randomTransition(r *rand.Rand, loc *time.Location) int64 {
	lo, hi := time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), time.Date(2037, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	for {
		x := lo + r.Int64N(hi-lo)
		_, end := time.Unix(x, 0).In(loc).ZoneBounds()
		if end.IsZero() {
			return x - x%60
		}
		_, o1 := end.Add(-time.Second).In(loc).Zone()
		_, o2 := end.In(loc).Zone()
		if o1 != o2 && o1%60 == 0 && o2%60 == 0 && end.Unix()%60 == 0 {
			return end.Unix()
		}
	}
}

// timeOfDaySpec is a random spec that matches most days, so that the
// windows around transitions see plenty of slots: random second, minute
// and hour fields, and usually "*" for the day fields.
func timeOfDaySpec(r *rand.Rand, withSeconds bool) string {
	full := randomSpec(r, withSeconds)
	if r.IntN(4) == 0 {
		return full
	}
	fields := []string{}
	if withSeconds {
		fields = append(fields, randomField(r, fieldSecond))
	}
	fields = append(fields, randomField(r, fieldMinute), randomField(r, fieldHour), "*", "*", "*")
	return fmt.Sprint(joinFields(fields))
}

func joinFields(fields []string) string {
	s := fields[0]
	for _, f := range fields[1:] {
		s += " " + f
	}
	return s
}
