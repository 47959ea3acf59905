package cronfence

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// excludedSlots returns the slots of job's skip rows of reason excluded,
// oldest first, failing on a skip row of another reason.
func excludedSlots(t *testing.T, st store.Store, job string) []time.Time {
	t.Helper()
	var slots []time.Time
	for _, r := range skipRuns(t, st, job) {
		if r.Reason != string(store.SkipExcluded) || !strings.Contains(strings.Join(r.Logs, "\n"), "exclusion") {
			t.Errorf("%s: skip row %+v; want only reason %s, naming the exclusion", job, r, store.SkipExcluded)
		}
		slots = append(slots, r.Slot.UTC())
	}
	slices.SortFunc(slots, time.Time.Compare)
	return slots
}

// Three replicas run two jobs across the night New York's clocks spring
// forward (2027-03-14, 02:00 EST becomes 03:00 EDT). An hourly job excludes
// the wall hours 00:00-03:59 of that day; both jobs are excluded
// 04:00-05:00 local by the exclusion for all jobs (Config.Exclude). Each excluded slot is recorded skipped, reason
// excluded, exactly once, and never runs; every other slot runs once; and
// the job's next slot passes over the excluded ones.
func TestAnExclusionSkipsExactlyItsSlotsAcrossADSTChange(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2027, 3, 13, 22, 30, 0, 0, ny)
	eachStoreFrom(t, start, func(t *testing.T, c *cluster) {
		l := newLedger()
		hourly := Job{Name: "hourly", Schedule: "0 * * * *", TimeZone: "America/New_York", Handler: l.handler(c.db),
			Exclude: []string{"* 0-3 14 3 *"}}
		every20 := Job{Name: "every20", Schedule: "*/20 * * * *", TimeZone: "America/New_York", Handler: l.handler(c.db)}
		all := []string{"2027-03-14T04:00/2027-03-14T05:00"}
		var replicas []*Scheduler
		for _, name := range []string{"a", "b", "c"} {
			replicas = append(replicas, c.startWith(Config{Owner: name, Clock: offsetClock{c.db, 0}, Retention: -1, Exclude: all}, hourly, every20))
		}
		c.advance(time.Hour, time.Minute) // to 23:30 EST
		for _, info := range replicas[1].Jobs() {
			want := time.Date(2027, 3, 13, 23, 40, 0, 0, ny)
			if info.Job.Name == "hourly" {
				// 00:00, 01:00 and 03:00 EDT excluded by its own, 04:00 by
				// the one for all; 02:00 does not exist.
				want = time.Date(2027, 3, 14, 5, 0, 0, 0, ny)
			}
			if !info.Next.Equal(want) {
				t.Errorf("%s: Jobs().Next = %s; want %s", info.Job.Name, info.Next.In(ny), want)
			}
		}
		c.advance(7*time.Hour, 5*time.Minute) // to 07:30 EDT

		wantExcluded := map[string][]time.Time{
			"hourly": {time.Date(2027, 3, 14, 0, 0, 0, 0, ny), time.Date(2027, 3, 14, 1, 0, 0, 0, ny), time.Date(2027, 3, 14, 3, 0, 0, 0, ny),
				time.Date(2027, 3, 14, 4, 0, 0, 0, ny)},
			"every20": {time.Date(2027, 3, 14, 4, 0, 0, 0, ny), time.Date(2027, 3, 14, 4, 20, 0, 0, ny),
				time.Date(2027, 3, 14, 4, 40, 0, 0, ny)},
		}
		for _, j := range []Job{hourly, every20} {
			r, err := j.prepare()
			if err != nil {
				t.Fatal(err)
			}
			got := excludedSlots(t, c.replicas[0].e.Store, j.Name)
			if want := wantExcluded[j.Name]; !slices.EqualFunc(got, want, time.Time.Equal) {
				t.Errorf("%s: skip rows for %v; want exactly %v", j.Name, got, want)
			}
			end := time.Date(2027, 3, 14, 7, 30, 0, 0, ny)
			for slot := r.sched.Next(start); slot.Before(end); slot = r.sched.Next(slot) {
				want := 1
				if slices.ContainsFunc(wantExcluded[j.Name], slot.Equal) {
					want = 0
				}
				if n := l.ran(j.Name, slot.UTC()); n != want {
					t.Errorf("%s: slot %s ran %d times; want %d", j.Name, slot.In(ny).Format("15:04 MST"), n, want)
				}
			}
		}
	})
}

// A replica that comes back after an outage catches up every missed slot
// (policy all) but the excluded ones, which it records skipped; with
// policy latest, a latest missed slot that is excluded is recorded, not
// run.
func TestCatchUpPassesOverExcludedSlots(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		l := newLedger()
		t0 := c.db.Now() // 12:00
		all := Job{Name: "all", Schedule: "*/10 * * * *", CatchUp: CatchUpAll, CatchUpWindow: time.Hour, Handler: l.handler(c.db),
			Exclude: []string{t0.Add(15*time.Minute).Format(time.RFC3339) + "/" + t0.Add(35*time.Minute).Format(time.RFC3339)}}
		latest := Job{Name: "latest", Schedule: "*/10 * * * *", CatchUpWindow: time.Hour, Handler: l.handler(c.db),
			Exclude: []string{"50 12 * * *"}}
		a := c.start("a", 0, all, latest)
		c.advance(time.Minute, 10*time.Second) // 12:00 runs, and both jobs are registered
		c.stop(a)
		c.db.Advance(54 * time.Minute) // 12:55: 12:10 to 12:50 missed
		c.start("b", 0, all, latest)
		c.start("c", 0, all, latest)
		c.advance(time.Minute, 10*time.Second)

		for _, slot := range []time.Time{t0, t0.Add(10 * time.Minute), t0.Add(40 * time.Minute), t0.Add(50 * time.Minute)} {
			if n := l.ran("all", slot); n != 1 {
				t.Errorf("all: slot %s ran %d times; want once", slot.Format(time.TimeOnly), n)
			}
		}
		want := []time.Time{t0.Add(20 * time.Minute).UTC(), t0.Add(30 * time.Minute).UTC()}
		if got := excludedSlots(t, c.replicas[1].e.Store, "all"); !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Errorf("all: skip rows for %v; want %v", got, want)
		}
		for _, slot := range want {
			if n := l.ran("all", slot); n != 0 {
				t.Errorf("all: excluded slot %s ran %d times", slot.Format(time.TimeOnly), n)
			}
		}
		if got := l.started("latest"); len(got) != 1 || !got[0].Equal(t0) {
			t.Errorf("latest: ran %v; want only 12:00 (its latest missed slot, 12:50, is excluded)", got)
		}
		if got := excludedSlots(t, c.replicas[1].e.Store, "latest"); len(got) != 1 || !got[0].Equal(t0.Add(50*time.Minute)) {
			t.Errorf("latest: skip rows for %v; want 12:50", got)
		}
	})
}

// Bad exclusions are refused by Register and New, naming the field and
// the entry; nothing is registered.
func TestExclusionsRefused(t *testing.T) {
	noop := func(context.Context, *Run) error { return nil }
	s, err := New(Config{Store: intercept(nil), Owner: "a"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		exclude []string
		want    string
	}{
		{[]string{"2026-12-27/2026-12-24"}, `job "x": Exclude: schedule: exclusion "2026-12-27/2026-12-24": its end 2026-12-24T00:00:00Z is not after its start`},
		{[]string{"2026-12-24/2026-12-27", "2026-12-26/2026-12-28"}, `overlap`},
		{[]string{"* * 25 13 *"}, `month field "13"`},
	} {
		err := s.Register(Job{Name: "x", Schedule: "@hourly", Handler: noop, Exclude: tc.exclude})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Register with Exclude %q = %v; want an error containing %q", tc.exclude, err, tc.want)
		}
	}
	if len(s.Jobs()) != 0 {
		t.Errorf("refused jobs were registered: %v", s.Jobs())
	}
	if _, err := New(Config{Store: intercept(nil), Owner: "a", Exclude: []string{"soon/later"}}); err == nil ||
		!strings.Contains(err.Error(), `Config.Exclude: schedule: exclusion "soon/later": start: "soon" is not a time`) {
		t.Errorf("New with a bad Config.Exclude = %v; want refused naming it", err)
	}
}
