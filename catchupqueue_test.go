package cronfence

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// Three replicas of a job whose catch-up policy is all cannot reach the
// store for six hours. Once it is back, every slot missed runs, each once,
// oldest first, one after another (no slot of the job is recorded as an
// overlap of another's run), and the slots after the outage run on time.
func TestCatchUpAllRunsEverySlotMissedInAnOutageOnceOldestFirst(t *testing.T) {
	eachStoreFrom(t, time.Date(2026, 3, 1, 11, 59, 30, 0, time.UTC), func(t *testing.T, c *cluster) {
		l := newLedger()
		job := Job{Name: "tenminutely", Schedule: "*/10 * * * *", CatchUp: CatchUpAll, CatchUpWindow: 7 * time.Hour,
			Handler: l.handler(c.db)}
		var down atomic.Bool
		for _, name := range []string{"a", "b", "c"} {
			st := intercept(c.open(t))
			st.before = func(call *call) {
				if down.Load() {
					call.err = errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
				}
			}
			c.startWith(Config{Owner: name, Clock: offsetClock{c.db, 0}, Retention: -1, Store: st}, job)
		}
		c.advance(30*time.Second+20*time.Minute, 10*time.Minute) // 12:00, 12:10, 12:20 run
		down.Store(true)
		c.advance(6*time.Hour, 10*time.Minute) // 12:30 … 18:20 are missed
		down.Store(false)
		c.advance(2*time.Second, time.Second) // a tick finds the store back
		outage := l.started(job.Name)[3:]
		c.advance(20*time.Minute, 10*time.Minute) // 18:30 and 18:40 on time

		first, end := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 18, 50, 0, 0, time.UTC)
		l.wantEachOnce(t, job.Name, first, end, 10*time.Minute)
		if len(outage) != 36 || !slices.IsSortedFunc(outage, time.Time.Compare) {
			t.Fatalf("after the outage %d slots ran, in the order %v; want the 36 missed, oldest first", len(outage), outage)
		}
		runs, err := c.replicas[0].e.Store.RunList(context.Background(), store.RunListParams{Job: job.Name, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		catchUps := 0
		for _, r := range runs {
			if r.Skipped {
				t.Fatalf("a slot was recorded skipped: %+v", r)
			}
			if r.CatchUp {
				catchUps++
			}
		}
		if catchUps != 36 {
			t.Fatalf("%d runs are marked catch-up, want the 36 missed slots'", catchUps)
		}
	})
}

// Three replicas start after six hours in which none ran. Each job runs
// the slots it missed as its policy says, each once: all, every slot
// inside its window, oldest first; all with MaxCatchUp 5, the five most
// recent; latest (the default with a window), the most recent; none,
// nothing.
func TestCatchUpPoliciesAtStartUp(t *testing.T) {
	eachStoreFrom(t, time.Date(2026, 3, 1, 11, 59, 30, 0, time.UTC), func(t *testing.T, c *cluster) {
		l := newLedger()
		every := func(name string) Job {
			return Job{Name: name, Schedule: "*/10 * * * *", Handler: l.handler(c.db)}
		}
		all, five, last, none := every("all"), every("five"), every("latest"), every("none")
		all.CatchUp, all.CatchUpWindow = CatchUpAll, 3*time.Hour
		five.CatchUp, five.CatchUpWindow, five.MaxCatchUp = CatchUpAll, 7*time.Hour, 5
		last.CatchUpWindow = 7 * time.Hour
		jobs := []Job{all, five, last, none}

		first := c.start("first", 0, jobs...)
		c.advance(30*time.Second, 30*time.Second) // 12:00 runs
		c.stop(first)
		c.db.Advance(6*time.Hour + 5*time.Minute + 30*time.Second) // 18:06: none ran 12:10 … 18:00
		for _, name := range []string{"a", "b", "c"} {
			c.start(name, 0, jobs...)
		}
		// The replicas that found the job's lease held claim again.
		c.advance(2*time.Second, time.Second)

		at := func(h, m int) time.Time { return time.Date(2026, 3, 1, h, m, 0, 0, time.UTC) }
		from := func(h, m int) []time.Time { // 12:00 by its timer, then h:m … 18:00
			slots := []time.Time{at(12, 0)}
			for s := at(h, m); !s.After(at(18, 0)); s = s.Add(10 * time.Minute) {
				slots = append(slots, s)
			}
			return slots
		}
		for job, want := range map[string][]time.Time{
			"all":    from(15, 10), // inside 3 h of 18:06
			"five":   from(17, 20),
			"latest": {at(12, 0), at(18, 0)},
			"none":   {at(12, 0)},
		} {
			if got := l.started(job); !slices.Equal(got, want) {
				t.Errorf("job %s ran %v, want %v, each once, in this order", job, got, want)
			}
		}
		l.wantNoneTwiceOrEarly(t)
	})
}

// A stored schedule whose catch-up policy is all, all of whose replicas
// stopped for an hour, runs every slot it missed once they start again,
// each once, oldest first: the policy is a setting of the stored schedule
// as of a declared job, and "before the job existed" is before the
// schedule was created.
func TestCatchUpAllOfAStoredSchedule(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		runs := newKindLedger()
		a := c.startKinds("a", runs.handler(c), "report")
		c.advance(30*time.Second, 30*time.Second) // created at 12:00:30: its 12:00 slot is from before it existed
		set := ScheduleSettings{Spec: "*/10 * * * *", Kind: "report", CatchUp: "all", CatchUpWindow: 2 * time.Hour, MaxCatchUp: 50}
		if _, err := a.Schedules().Create(context.Background(), "tenminutely", set, "alice"); err != nil {
			t.Fatal(err)
		}
		c.seen("tenminutely", 1, a)
		c.advance(10*time.Minute, 10*time.Minute) // 12:10 runs
		c.stop(a)
		c.db.Advance(time.Hour + 5*time.Minute) // 13:15:30 or so: none ran 12:20 … 13:10
		for _, name := range []string{"a2", "b", "c"} {
			c.startKinds(name, runs.handler(c), "report")
		}
		c.advance(2*time.Second, time.Second) // the replicas that found the lease held claim again

		var want []time.Time
		for s := time.Date(2026, 3, 1, 12, 10, 0, 0, time.UTC); !s.After(time.Date(2026, 3, 1, 13, 10, 0, 0, time.UTC)); s = s.Add(10 * time.Minute) {
			want = append(want, s)
		}
		if got := runs.started("tenminutely"); !slices.Equal(got, want) {
			t.Fatalf("ran %v, want %v, each once, in this order", got, want)
		}
		runs.wantNoneTwiceOrEarly(t)
	})
}
