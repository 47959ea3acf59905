package cronfence

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/mysql"
	"github.com/cronfence/cronfence/store/postgres"
	"github.com/cronfence/cronfence/store/sqlite"
	"github.com/jackc/pgx/v5"
)

// renameTable renames one of st's tables aside (or back), as an operator's
// mistake would.
func renameTable(t *testing.T, st store.Store, table string, back bool) {
	t.Helper()
	from, to := table, table+"_aside"
	if back {
		from, to = to, from
	}
	var err error
	switch s := st.(type) {
	case *postgres.Store:
		_, err = s.Pool().Exec(context.Background(), `ALTER TABLE `+pgx.Identifier{s.Schema(), from}.Sanitize()+` RENAME TO `+pgx.Identifier{to}.Sanitize())
	case *sqlite.Store:
		_, err = s.DB().Exec(`ALTER TABLE cronfence_` + from + ` RENAME TO cronfence_` + to)
	case *mysql.Store:
		_, err = s.DB().Exec(`RENAME TABLE cronfence_` + from + ` TO cronfence_` + to)
	default:
		t.Fatalf("cannot rename a table of %T", st)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a log destination tests read while replicas write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The pause table renamed under running replicas (seed 002: a broken table
// must not silently stop every job): declared-enabled jobs keep running, on
// their declared value, a job paused by an override among them; a
// declared-disabled job stays off; a replica started meanwhile starts and
// runs them the same way; each replica warns once. Renamed back, the
// override is honoured at the next slot. (Before: every claim failed, the
// replicas took the store for unreachable, and no job ran.)
func TestBrokenPauseTableFailsOpen(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		l := newLedger()
		jobs := []Job{
			{Name: "on", Schedule: "* * * * *", Handler: l.handler(c.db)},
			{Name: "off", Schedule: "* * * * *", Disabled: true, Handler: l.handler(c.db)},
			{Name: "paused", Schedule: "* * * * *", Handler: l.handler(c.db)},
		}
		logs := &syncBuffer{}
		a := c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: -1, Logger: slog.New(slog.NewTextHandler(logs, nil))}, jobs...)
		if _, err := a.SetEnabled(context.Background(), "paused", new(bool), "ana", "vendor outage"); err != nil {
			t.Fatal(err)
		}
		c.advance(time.Minute, time.Second) // 12:01: the override holds
		m1 := c.db.Now()
		wantRan := func(when string, slot time.Time, want map[string]int) {
			t.Helper()
			for job, n := range want {
				if got := l.ran(job, slot); got != n {
					t.Fatalf("%s: %s ran slot %s %d times, want %d", when, job, slot.Format(time.TimeOnly), got, n)
				}
			}
		}
		wantRan("before", m1, map[string]int{"on": 1, "off": 0, "paused": 0})

		renameTable(t, a.e.Store, "job_state", false)
		c.advance(time.Minute, time.Second) // 12:02
		m2 := c.db.Now()
		wantRan("renamed", m2, map[string]int{"on": 1, "off": 0, "paused": 1})
		if n := strings.Count(logs.String(), "the pause overrides cannot be read"); n != 1 {
			t.Fatalf("the warning was logged %d times, want once:\n%s", n, logs.String())
		}
		c.start("b", 0, jobs...)            // starts on the damaged schema
		c.advance(time.Minute, time.Second) // 12:03
		wantRan("renamed, two replicas", c.db.Now(), map[string]int{"on": 1, "off": 0, "paused": 1})

		renameTable(t, a.e.Store, "job_state", true)
		c.advance(time.Minute, time.Second) // 12:04: the override decides again
		wantRan("back", c.db.Now(), map[string]int{"on": 1, "off": 0, "paused": 0})
		if !strings.Contains(logs.String(), "the pause overrides read again") {
			t.Fatalf("the recovery was not logged:\n%s", logs.String())
		}
		l.wantNoneTwiceOrEarly(t)
		c.wantNeverDown()
	})
}

func TestPauseReachesEveryReplicaAndSurvivesRestart(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		l := newLedger()
		job := Job{Name: "tick", Schedule: "* * * * * *", Handler: l.handler(c.db)}
		a := c.start("a", 0, job)
		c.start("b", 0, job)
		c.advance(2*time.Second, time.Second)
		if _, err := a.SetEnabled(context.Background(), "tick", ptr(false), "ana", "maintenance"); err != nil {
			t.Fatal(err)
		}
		paused := c.db.Now()
		c.advance(3*time.Second, time.Second)
		// A restart keeps the pause.
		c.stop(a)
		c.start("a2", 0, job)
		c.advance(2*time.Second, time.Second)
		l.mu.Lock()
		for slot := range l.runs["tick"] {
			if slot.After(paused) {
				l.mu.Unlock()
				t.Fatalf("slot %s ran while paused", slot)
			}
		}
		l.mu.Unlock()
		runs, err := c.replicas[0].e.Store.RunList(context.Background(), store.RunListParams{Job: "tick"})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if r.Slot.After(paused) && (!r.Skipped || r.Reason != string(store.ClaimPaused)) {
				t.Fatalf("a paused slot left a run row other than its skip: %+v", r)
			}
		}
		// nil restores the declared value (enabled).
		if _, err := c.replicas[0].SetEnabled(context.Background(), "tick", nil, "ana", ""); err != nil {
			t.Fatal(err)
		}
		resumed := c.db.Now()
		c.advance(3*time.Second, time.Second)
		l.wantNoneTwiceOrEarly(t)
		for s := resumed.Add(time.Second); !s.After(resumed.Add(3 * time.Second)); s = s.Add(time.Second) {
			if n := l.ran("tick", s); n != 1 {
				t.Fatalf("after resume slot %s ran %d times", s, n)
			}
		}
	})
}

// Each slot due while its job is paused is settled skipped and shows in the
// job's history as a skip with reason paused, recorded once across the
// replicas that claimed it, and logged once, at INFO, naming the job and
// the slot; a job declared disabled likewise. Before, nothing showed: the
// dashboard drew the slot as missed.
func TestAPausedSlotIsRecordedAndLoggedOnce(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		var out syncBuffer
		log := slog.New(slog.NewJSONHandler(&out, nil))
		tick := Job{Name: "tick", Schedule: "* * * * * *", Handler: func(context.Context, *Run) error { return nil }}
		off := Job{Name: "off", Schedule: "* * * * * *", Disabled: true, Handler: func(context.Context, *Run) error { return nil }}
		a := c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: -1, Logger: log}, tick, off)
		c.startWith(Config{Owner: "b", Clock: offsetClock{c.db, 0}, Retention: -1, Logger: log}, tick, off)
		if _, err := a.SetEnabled(context.Background(), "tick", ptr(false), "ana", "maintenance"); err != nil {
			t.Fatal(err)
		}
		first := c.db.Now().Truncate(time.Second).Add(time.Second)
		c.advance(3*time.Second, time.Second)
		var slots []string
		for s := first; !s.After(first.Add(2 * time.Second)); s = s.Add(time.Second) {
			slots = append(slots, s.Format(time.RFC3339))
		}
		for job, line := range map[string]string{"tick": store.PausedSkipLine(true), "off": store.PausedSkipLine(false)} {
			runs, err := a.Store().RunList(context.Background(), store.RunListParams{Job: job})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range runs {
				if !r.Skipped || r.Reason != string(store.ClaimPaused) || len(r.Logs) != 1 || r.Logs[0] != line {
					t.Fatalf("%s: run row %+v; want only skips with reason paused, logged %q", job, r, line)
				}
				got = append([]string{r.Slot.Format(time.RFC3339)}, got...)
			}
			if strings.Join(got, " ") != strings.Join(slots, " ") {
				t.Fatalf("%s: skips of slots %v, want one of each slot due while paused %v", job, got, slots)
			}
			var logged []string
			for _, l := range jsonLines(t, &out, "cronfence: slot skipped: the job is paused") {
				if l["job"] == job {
					if l["level"] != "INFO" {
						t.Fatalf("%s: %v, want INFO", job, l)
					}
					logged = append(logged, l["slot"].(string))
				}
			}
			slices.Sort(logged)
			if strings.Join(logged, " ") != strings.Join(slots, " ") {
				t.Fatalf("%s: logged paused slots %v across both replicas, want each once: %v", job, logged, slots)
			}
		}
	})
}

func TestOverlapSkipRecordedAndTriggerRefused(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		b := newBlocker()
		job := Job{Name: "long", Schedule: "* * * * *", Handler: b.handler}
		a := c.start("a", 0, job)
		other := c.start("b", 0, job)
		c.db.Advance(time.Minute) // the first slot: one replica runs it and holds on
		first := <-b.started
		c.settleHolding(1)
		c.db.Advance(time.Minute) // the next slot overlaps
		c.settleHolding(1)
		runs, err := a.e.Store.RunList(context.Background(), store.RunListParams{Job: "long"})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 1 || !runs[0].Skipped || runs[0].Reason != "already_executing" ||
			!strings.Contains(runs[0].Logs[0], "held by "+first.Owner) {
			t.Fatalf("runs after the overlap = %+v; want one skip row naming %s", runs, first.Owner)
		}
		_, err = other.Trigger(context.Background(), "long")
		var ae *AlreadyExecutingError
		if !errors.Is(err, ErrAlreadyExecuting) || !errors.As(err, &ae) || ae.Holder.Owner != first.Owner || !ae.Skip.Manual || !ae.Skip.Skipped {
			t.Fatalf("Trigger during a run = %v; want ErrAlreadyExecuting naming %s with a manual skip row", err, first.Owner)
		}
		close(b.release)
		c.settle()
		// Now free: a manual run goes through.
		mr, err := other.Trigger(context.Background(), "long")
		if err != nil || mr.Generation != first.Generation+1 {
			t.Fatalf("Trigger when free = %+v, %v", mr, err)
		}
		run := <-b.started
		if run.Origin != OriginManual || !run.Slot.IsZero() {
			t.Fatalf("triggered run = %+v", run)
		}
		c.settle()
	})
}

// An API-only replica (timers disabled) fires nothing, but its Trigger meets
// a worker's run, and its pause reaches the worker.
func TestTimersDisabledReplicaServesManualRunsAndPauses(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		b := newBlocker()
		job := Job{Name: "long", Schedule: "* * * * *", Handler: b.handler}
		c.start("worker", 0, job)
		api := c.startWith(Config{Owner: "api", Clock: offsetClock{c.db, 0}, Retention: -1, DisableTimers: true}, job)
		c.db.Advance(time.Minute)
		run := <-b.started
		if run.Owner != "worker" {
			t.Fatalf("run by %s, want the worker", run.Owner)
		}
		if _, err := api.Trigger(context.Background(), "long"); !errors.Is(err, ErrAlreadyExecuting) {
			t.Fatalf("Trigger on the API replica during the worker's run: %v, want ErrAlreadyExecuting", err)
		}
		close(b.release)
		c.settle()
		if _, err := api.SetEnabled(context.Background(), "long", ptr(false), "ana", ""); err != nil {
			t.Fatal(err)
		}
		c.advance(time.Minute, time.Minute)
		select {
		case r := <-b.started:
			t.Fatalf("a paused job ran: %+v", r)
		default:
		}
		if jobs := api.Jobs(); len(jobs) != 1 || jobs[0].Job.Name != "long" || jobs[0].Next.IsZero() {
			t.Fatalf("Jobs() = %+v", jobs)
		}
	})
}

// Three replicas run a minutely job paused until 12:05. The slots before
// it are settled skipped, reason paused, each once; from 12:05 on the job
// runs again, each slot once, with no replica restarted and nothing
// written after the pause. A pause until a time already past is refused.
func TestPauseUntilResumesByItselfOnEveryReplica(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		l := newLedger()
		job := Job{Name: "minutely", Schedule: "* * * * *", Handler: l.handler(c.db)}
		a := c.start("a", 0, job)
		c.start("b", 0, job)
		c.start("c", 0, job)
		at := func(m int) time.Time { return time.Date(2026, 3, 1, 12, m, 0, 0, time.UTC) }

		ctx := context.Background()
		if _, err := a.PauseUntil(ctx, "minutely", at(0), "ops", ""); !errors.Is(err, store.ErrInvalidArgument) {
			t.Fatalf("a pause until now = %v, want refused as invalid", err)
		}
		js, err := a.PauseUntil(ctx, "minutely", at(5), "ops", "vendor window")
		if err != nil || js.EnabledOverride == nil || *js.EnabledOverride || !js.Until.Equal(at(5)) {
			t.Fatalf("PauseUntil = %+v, %v", js, err)
		}
		c.advance(10*time.Minute, 10*time.Second)

		if got, want := l.started("minutely"), []time.Time{at(5), at(6), at(7), at(8), at(9), at(10)}; !slices.Equal(got, want) {
			t.Fatalf("ran %v, want %v: nothing while paused, each slot once from the pause's end", got, want)
		}
		runs, err := a.e.Store.RunList(ctx, store.RunListParams{Job: "minutely", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		paused := map[time.Time]int{}
		for _, r := range runs {
			if r.Skipped {
				if r.Reason != string(store.ClaimPaused) {
					t.Fatalf("slot %s skipped for %q, want paused", r.Slot, r.Reason)
				}
				paused[r.Slot]++
			}
		}
		for m := 1; m <= 4; m++ {
			if paused[at(m)] != 1 {
				t.Fatalf("slot %s has %d paused skip rows, want one (rows: %v)", at(m).Format(time.TimeOnly), paused[at(m)], paused)
			}
		}
		if len(paused) != 4 {
			t.Fatalf("paused skips of %d slots, want the 4 before the pause's end: %v", len(paused), paused)
		}
		l.wantNoneTwiceOrEarly(t)
	})
}
