package forecast

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cronfence/cronfence/internal/jitter"
	"github.com/cronfence/cronfence/schedule"
)

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func instant(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

func parse(t *testing.T, spec, zoneName string) schedule.Schedule {
	t.Helper()
	s, err := schedule.Parse(spec, &schedule.Options{Location: zone(t, zoneName)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A change is found to the second, with the offsets on both sides, and
// printed as the wall clock shows it.
func TestTransitions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		zone, from, to string
		want           []string // At in UTC, then String
	}{
		{"America/New_York", "2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z", []string{
			"2027-03-14T07:00:00Z 2027-03-14 02:00 EST → 03:00 EDT (clocks forward 1h)",
			"2027-11-07T06:00:00Z 2027-11-07 02:00 EDT → 01:00 EST (clocks back 1h)",
		}},
		{"Australia/Lord_Howe", "2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z", []string{
			"2027-04-03T15:00:00Z 2027-04-04 02:00 +11 → 01:30 +1030 (clocks back 30m)",
			"2027-10-02T15:30:00Z 2027-10-03 02:00 +1030 → 02:30 +11 (clocks forward 30m)",
		}},
		// Samoa skipped 30 December 2011: the date changes with the clock.
		{"Pacific/Apia", "2011-12-01T00:00:00Z", "2012-01-01T00:00:00Z", []string{
			"2011-12-30T10:00:00Z 2011-12-30 00:00 -10 → 2011-12-31 00:00 +14 (clocks forward 24h)",
		}},
		{"UTC", "2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z", nil},
		// The bounds: (from, to].
		{"America/New_York", "2027-03-14T07:00:00Z", "2027-11-07T06:00:00Z", []string{
			"2027-11-07T06:00:00Z 2027-11-07 02:00 EDT → 01:00 EST (clocks back 1h)",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.zone+" "+tt.from, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, tr := range Transitions(zone(t, tt.zone), instant(t, tt.from), instant(t, tt.to)) {
				got = append(got, tr.At.UTC().Format(time.RFC3339)+" "+tr.String())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("transitions (-want +got):\n%s", diff)
			}
		})
	}
}

// What each change of a year does to a job, as cronie's rules say
// (schedule/dst.go): fixed times move out of a gap and run once in a
// repeat; wildcards follow real time; @every counts elapsed time.
func TestEffects(t *testing.T) {
	t.Parallel()
	const ny2027 = "2027-01-01T00:00:00Z"
	tests := []struct {
		name, spec, zone, from string
		want                   []string // one per change in the year after from
	}{
		{"fixed time in the gap moves", "30 2 * * *", "America/New_York", ny2027, []string{
			"the 02:30 run moves to 03:00 EDT",
			"no effect: the job names no time in the repeated 01:00–01:59",
		}},
		{"fixed time in the repeat runs once", "30 1 * * *", "America/New_York", ny2027, []string{
			"no effect: the job names no time in the skipped 02:00–02:59",
			"the 01:30 run happens once, at 01:30 EDT, not again at 01:30 EST",
		}},
		{"wildcard skips and repeats", "*/15 * * * *", "America/New_York", ny2027, []string{
			"the 4 runs of 02:00–02:45 do not happen: 02:00–02:59 does not exist that day",
			"the 4 runs of 01:00–01:45 happen twice: in EDT, then again in EST",
		}},
		{"@hourly is a wildcard", "@hourly", "America/New_York", ny2027, []string{
			"the 02:00 run does not happen: 02:00–02:59 does not exist that day",
			"the 01:00 run happens twice: at 01:00 EDT and again at 01:00 EST",
		}},
		{"a fixed list in the gap joins the run at its end", "0,30 2-3 * * *", "America/New_York", ny2027, []string{
			"the 2 runs of 02:00–02:30 and the 03:00 run are one run, at 03:00 EDT",
			"no effect: the job names no time in the repeated 01:00–01:59",
		}},
		{"fixed list in the repeat", "15,45 1 * * *", "America/New_York", ny2027, []string{
			"no effect: the job names no time in the skipped 02:00–02:59",
			"the 2 runs of 01:15–01:45 happen once each, in EDT, not again in EST",
		}},
		{"six fields with seconds", "30 30 2 * * *", "America/New_York", ny2027, []string{
			"the 02:30:30 run moves to 03:00 EDT",
			"no effect: the job names no time in the repeated 01:00–01:59",
		}},
		{"a zone prefix wins", "CRON_TZ=America/New_York 30 2 * * *", "UTC", ny2027, []string{
			"the 02:30 run moves to 03:00 EDT",
			"no effect: the job names no time in the repeated 01:00–01:59",
		}},
		{"@every counts elapsed time", "@every 30m", "America/New_York", ny2027, []string{
			"no slot changes (@every counts elapsed time); its wall times move 1h later",
			"no slot changes (@every counts elapsed time); its wall times move 1h earlier",
		}},
		{"half-hour change: repeat", "45 1 * * *", "Australia/Lord_Howe", ny2027, []string{
			"the 01:45 run happens once, at 01:45 +11, not again at 01:45 +1030",
			"no effect: the job names no time in the skipped 02:00–02:29",
		}},
		{"half-hour change: gap", "15 2 * * *", "Australia/Lord_Howe", ny2027, []string{
			"no effect: the job names no time in the repeated 01:30–01:59",
			"the 02:15 run moves to 02:30 +11",
		}},
		{"a day skipped is lost", "0 9 * * *", "Pacific/Apia", "2011-12-01T00:00:00Z", []string{
			"the 09:00 run does not happen: a jump of 3h or more is a clock reset, and the fixed times in it are lost (as in cronie)",
			"no effect: the job names no time in the repeated 03:00–03:59",
			"no effect: the job names no time in the skipped 03:00–03:59",
		}},
		{"a gap at midnight", "5 0 * * *", "America/Sao_Paulo", "2018-06-01T00:00:00Z", []string{
			"the 00:05 run moves to 01:00 -02",
			"no effect: the job names no time in the repeated 23:00–23:59",
		}},
		{"no changes in UTC", "30 2 * * *", "UTC", ny2027, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			from := instant(t, tt.from)
			effects, err := Effects(parse(t, tt.spec, tt.zone), from, from.Add(Year))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range effects {
				got = append(got, e.String())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("effects of %q in %s (-want +got):\n%s", tt.spec, tt.zone, diff)
			}
		})
	}
}

// KindOf agrees with what the schedule does in a repeated hour: a fixed
// job's 01:xx runs once, a wildcard's twice.
func TestKindOfAgreesWithTheSchedule(t *testing.T) {
	t.Parallel()
	fallBack := instant(t, "2027-11-07T06:00:00Z") // 02:00 EDT → 01:00 EST
	for _, spec := range []string{
		"30 1 * * *", "0-59/15 1 * * *", "15,45 0-3 * * *", "0 1-2 * * *", "0 30 1 * * *",
		"*/15 * * * *", "* 1 * * *", "30 * * * *", "30 */1 * * *", "@hourly", "0 */15 * * * *",
	} {
		s := parse(t, spec, "America/New_York")
		second, _, _ := between(s, fallBack, fallBack.Add(time.Hour))
		if twice := second > 0; twice != (KindOf(spec) == Wildcard) {
			t.Errorf("%q: KindOf says %v, but the schedule runs %d times in the second pass of 01:xx", spec, KindOf(spec), second)
		}
	}
	if KindOf("@every 1h") != Elapsed || KindOf("@daily") != Fixed {
		t.Errorf("KindOf(@every 1h) = %v, KindOf(@daily) = %v", KindOf("@every 1h"), KindOf("@daily"))
	}
}

// Slots are the scheduler's: the start delay is jitter.Delay with the
// job's following slot, an excluded slot is passed over (or listed with
// its entry), and a slot a change touches says how.
func TestSlots(t *testing.T) {
	t.Parallel()
	t.Run("jitter", func(t *testing.T) {
		t.Parallel()
		// Uneven intervals, 20m then 40m, and a jitter longer than the
		// first: the delay stays below the time to the following slot.
		s := parse(t, "0,20 * * * *", "UTC")
		j := Job{Name: "report", Schedule: s, Jitter: 30 * time.Minute}
		slots, err := Slots(j, instant(t, "2027-01-01T00:00:00Z"), 20, false)
		if err != nil || len(slots) != 20 {
			t.Fatalf("%d slots, %v", len(slots), err)
		}
		distinct := map[time.Duration]bool{}
		for _, sl := range slots {
			next := sl.At.Add(20 * time.Minute)
			if sl.At.Minute() == 20 {
				next = sl.At.Add(40 * time.Minute)
			}
			want := jitter.Delay("report", 30*time.Minute, sl.At, next)
			if sl.Delay != want || sl.Delay >= next.Sub(sl.At) {
				t.Errorf("slot %s: delay %s, want %s", sl.At, sl.Delay, want)
			}
			distinct[sl.Delay] = true
		}
		if len(distinct) < 10 {
			t.Errorf("20 slots have %d distinct delays: not spread", len(distinct))
		}
	})
	t.Run("exclusions", func(t *testing.T) {
		t.Parallel()
		loc := zone(t, "Europe/Lisbon")
		x, err := schedule.ParseExclusions([]string{"* * 25 12 *", "2026-12-28/2026-12-30"}, loc)
		if err != nil {
			t.Fatal(err)
		}
		j := Job{Name: "daily", Schedule: parse(t, "0 9 * * *", "Europe/Lisbon"), Exclusions: x}
		from := instant(t, "2026-12-24T12:00:00Z")
		format := func(slots []Slot) []string {
			var out []string
			for _, s := range slots {
				out = append(out, s.At.Format("01-02")+" "+s.Excluded)
			}
			return out
		}
		got, err := Slots(j, from, 4, false)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"12-26 ", "12-27 ", "12-30 ", "12-31 "}, format(got)); diff != "" {
			t.Errorf("slots that run (-want +got):\n%s", diff)
		}
		got, err = Slots(j, from, 6, true)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"12-25 * * 25 12 *", "12-26 ", "12-27 ", "12-28 2026-12-28/2026-12-30", "12-29 2026-12-28/2026-12-30", "12-30 "}
		if diff := cmp.Diff(want, format(got)); diff != "" {
			t.Errorf("slots with the excluded (-want +got):\n%s", diff)
		}
	})
	t.Run("notes", func(t *testing.T) {
		t.Parallel()
		j := Job{Name: "hourly", Schedule: parse(t, "0 * * * *", "America/New_York")}
		slots, err := Slots(j, instant(t, "2027-11-07T04:30:00Z"), 3, false) // 00:30 EDT
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range slots {
			got = append(got, s.At.Format("15:04 MST")+": "+strings.Join(s.Notes, "; "))
		}
		want := []string{
			"01:00 EDT: first pass of the repeated 01:00–01:59 (EDT); runs again in EST",
			"01:00 EST: second pass of the repeated 01:00–01:59 (EST)",
			"02:00 EST: ",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("notes (-want +got):\n%s", diff)
		}
		j = Job{Name: "daily", Schedule: parse(t, "30 2 * * *", "America/New_York")}
		slots, err = Slots(j, instant(t, "2027-03-13T12:00:00Z"), 2, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(slots) != 2 || slots[0].At.Format(time.RFC3339) != "2027-03-14T03:00:00-04:00" ||
			cmp.Diff([]string{"moved here from 02:30 (02:00–02:59 does not exist that day)"}, slots[0].Notes) != "" || slots[1].Notes != nil {
			t.Errorf("slots around the spring change: %+v", slots)
		}
	})
}

// A year's count names each exclusion that holds slots, with how many
// and the first.
func TestCountSpan(t *testing.T) {
	t.Parallel()
	x, err := schedule.ParseExclusions([]string{"* * * * SAT,SUN", "2027-08-01/2027-09-01"}, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	j := Job{Name: "d", Schedule: parse(t, "0 6 * * *", "UTC"), Exclusions: x}
	from := instant(t, "2027-01-01T00:00:00Z") // a Friday
	got := CountSpan(j, from, from.AddDate(1, 0, 0))
	// 2027: 365 days, 104 weekend days, 9 of them in August; a range
	// is matched first, so it holds all 31 days of August.
	want := Span{From: from, To: from.AddDate(1, 0, 0), Complete: true, Slots: 365, Runs: 365 - 95 - 31,
		FirstRuns: []time.Time{instant(t, "2027-01-01T06:00:00Z"), instant(t, "2027-01-04T06:00:00Z"),
			instant(t, "2027-01-05T06:00:00Z"), instant(t, "2027-01-06T06:00:00Z")},
		Excluded: []Met{
			{Entry: "* * * * SAT,SUN", Count: 95, First: instant(t, "2027-01-02T06:00:00Z")},
			{Entry: "2027-08-01/2027-09-01", Count: 31, First: instant(t, "2027-08-01T06:00:00Z")},
		}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("span (-want +got):\n%s", diff)
	}
	// A job every ten seconds: the count stops, and says where.
	j = Job{Name: "tick", Schedule: parse(t, "*/10 * * * * *", "UTC")}
	got = CountSpan(j, from, from.Add(Year))
	if got.Complete || got.Slots != maxSpanSlots || !got.To.Equal(from.Add(maxSpanSlots*10*time.Second)) {
		t.Errorf("capped span: complete %v, %d slots, to %s", got.Complete, got.Slots, got.To)
	}
}

func TestWarnings(t *testing.T) {
	t.Parallel()
	from := instant(t, "2027-03-01T00:00:00Z")
	exclusions := func(entries ...string) *schedule.Exclusions {
		x, err := schedule.ParseExclusions(entries, time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	healthy := Job{Name: "ok", LeaseTTL: 90 * time.Second, Timeout: time.Minute, CatchUp: "none"}
	tests := []struct {
		name string
		spec string
		edit func(j *Job)
		want []string
	}{
		{"healthy", "*/5 * * * *", func(*Job) {}, nil},
		{"rare: leap day", "0 0 29 2 *", func(*Job) {}, []string{
			"rare: runs once in the next 366 days: 2028-02-29T00:00:00Z"}},
		{"never: every slot excluded", "0 0 29 2 *", func(j *Job) { j.Exclusions = exclusions("* * 29 2 *") }, []string{
			`never: no slot runs in the next 5 years ("* * 29 2 *" holds 1)`}},
		{"excluded this year", "0 12 * * *", func(j *Job) { j.Exclusions = exclusions("2027-03-01/2028-03-02") }, []string{
			`excluded: all 366 slots of the next 366 days are excluded; "2027-03-01/2028-03-02" holds 366; the next run is 2028-03-02T12:00:00Z`}},
		{"lease TTL shorter than the timeout", "*/5 * * * *", func(j *Job) { j.LeaseTTL, j.Timeout = 30*time.Second, 10*time.Minute }, []string{
			"lease_ttl: lease_ttl 30s is shorter than timeout 10m: a run renews its lease every 10s, but if its replica stalls for 30s " +
				"(a paused VM, a cut network) another replica resumes the slot while the first may still be running; " +
				"fence the command's writes and complete the slot with them (completes_in_tx, docs/fencing.md), or raise lease_ttl"}},
		{"a completing job is fenced", "*/5 * * * *", func(j *Job) {
			j.LeaseTTL, j.Timeout, j.CompletesInTx = 30*time.Second, 10*time.Minute, true
		}, nil},
		{"catch-up all over many slots", "*/5 * * * *", func(j *Job) { j.CatchUp, j.CatchUpWindow, j.MaxCatchUp = "all", time.Hour, 100 }, []string{
			"catch_up: catch_up all with catch_up_window 1h, longer than the job's interval of 5m: after an outage as long as the window, " +
				"up to 12 missed slots run one after another at start-up"}},
		{"catch-up all capped", "*/5 * * * *", func(j *Job) { j.CatchUp, j.CatchUpWindow, j.MaxCatchUp = "all", time.Hour, 5 }, []string{
			"catch_up: catch_up all with catch_up_window 1h, longer than the job's interval of 5m: after an outage as long as the window, " +
				"5 missed slots run (max_catch_up; a window that long holds 12) one after another at start-up"}},
		{"catch-up latest runs one", "*/5 * * * *", func(j *Job) { j.CatchUp, j.CatchUpWindow = "latest", time.Hour }, nil},
		{"catch-up all within the interval", "0 * * * *", func(j *Job) { j.CatchUp, j.CatchUpWindow, j.MaxCatchUp = "all", 30*time.Minute, 100 }, nil},
		{"jitter over the interval", "*/5 * * * *", func(j *Job) { j.Jitter = 5 * time.Minute }, []string{
			"jitter: jitter 5m is not below the job's shortest interval, 5m (from 2027-03-01T00:05:00Z): serve refuses the job"}},
		{"jitter over the deadline", "0 * * * *", func(j *Job) { j.Jitter, j.Deadline = 10*time.Minute, 10*time.Minute }, []string{
			"jitter: jitter 10m is not below deadline 10m, which counts from the slot: serve refuses the job"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j := healthy
			j.Schedule = parse(t, tt.spec, "UTC")
			tt.edit(&j)
			start := from
			var got []string
			for _, w := range Warnings(j, start, CountSpan(j, start, start.Add(Year))) {
				got = append(got, w.String())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// A job with no slot in the year ahead but one within five years is rare,
// and says when it runs next.
func TestWarningsNoRunThisYear(t *testing.T) {
	t.Parallel()
	j := Job{Name: "leap", Schedule: parse(t, "0 0 29 2 *", "UTC"), LeaseTTL: 90 * time.Second}
	from := instant(t, "2028-03-01T00:00:00Z")
	got := Warnings(j, from, CountSpan(j, from, from.Add(Year)))
	want := []Warning{{Code: "rare", Text: "runs 0 times in the next 366 days; the next run is 2032-02-29T00:00:00Z"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}
