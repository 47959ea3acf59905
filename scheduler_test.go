package cronfence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
)

func TestEverySlotOnceAcrossThreeReplicas(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		l := newLedger()
		job := Job{Name: "tick", Schedule: "* * * * * *", Handler: l.handler(c.db)}
		start := c.db.Now()
		for i := range 3 {
			c.start(fmt.Sprintf("replica-%d", i), 0, job)
		}
		c.advance(time.Minute, time.Second)
		defer func() {
			if t.Failed() {
				dumpRuns(t, c.replicas[0].e.Store, "tick")
			}
		}()
		l.wantEachOnce(t, "tick", start.Add(time.Second), start.Add(time.Minute+time.Second), time.Second)
		c.wantNeverDown()
	})
}

func TestManyJobsEverySlotOnce(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		l := newLedger()
		var jobs []Job
		for i := range 200 {
			jobs = append(jobs, Job{Name: fmt.Sprintf("job-%03d", i), Schedule: "* * * * * *", Handler: l.handler(c.db)})
		}
		start := c.db.Now()
		for i := range 3 {
			c.start(fmt.Sprintf("replica-%d", i), 0, jobs...)
		}
		// A minute on PostgreSQL; ten seconds on SQLite, whose pure-Go
		// driver under the race detector needs three minutes for the
		// 12,000 runs of a minute (one host is not where 200 jobs a second
		// belong anyway).
		d := time.Minute
		if c.kind == "sqlite" {
			d = 10 * time.Second
		}
		c.advance(d, time.Second)
		for _, j := range jobs {
			l.wantEachOnce(t, j.Name, start.Add(time.Second), start.Add(d+time.Second), time.Second)
		}
		c.wantNeverDown()
	})
}

// Replica clocks 90 s ahead and behind: the database clock decides, so no
// slot runs early and none twice. Replicas up to 2 s late with a fast job
// are the failure of designs that release a lock at the end of a run.
func TestSkewedClocksNeitherEarlyNorTwice(t *testing.T) {
	for _, offsets := range [][]time.Duration{
		{0, 90 * time.Second, -90 * time.Second},
		{0, -time.Second, -2 * time.Second},
	} {
		t.Run(fmt.Sprint(offsets), func(t *testing.T) {
			eachStore(t, func(t *testing.T, c *cluster) {
				l := newLedger()
				job := Job{Name: "fast", Schedule: "*/5 * * * * *", Handler: l.handler(c.db)}
				start := c.db.Now()
				for i, off := range offsets {
					c.start(fmt.Sprintf("replica-%d", i), off, job)
				}
				c.advance(3*time.Minute, time.Second)
				// Nothing ran early or twice, whatever the clocks. Once the
				// replicas behind have caught up with the slots the others
				// already ran (their first 90 s fire slots from before the
				// cluster existed), every slot runs exactly once.
				l.wantNoneTwiceOrEarly(t)
				c.wantNeverDown()
				for slot := start.Add(100 * time.Second); !slot.After(start.Add(3 * time.Minute)); slot = slot.Add(5 * time.Second) {
					if n := l.ran("fast", slot); n != 1 {
						t.Fatalf("slot %s ran %d times, want once", slot.Format(time.TimeOnly), n)
					}
				}
			})
		})
	}
}

func TestEveryIsAnchoredAcrossReplicasStartedApart(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		l := newLedger()
		job := Job{Name: "seven", Schedule: "@every 7s", Handler: l.handler(c.db)}
		c.start("early", 0, job)
		c.advance(3*time.Second, time.Second)
		c.start("late", 0, job)
		c.advance(30*time.Second, time.Second)
		l.mu.Lock()
		defer l.mu.Unlock()
		if len(l.runs["seven"]) < 4 {
			t.Fatalf("only %d slots ran", len(l.runs["seven"]))
		}
		for slot, by := range l.runs["seven"] {
			if slot.Unix()%7 != 0 || len(by) != 1 {
				t.Fatalf("slot %s (Unix %d) ran by %v: want multiples of 7 s since the epoch, once", slot, slot.Unix(), by)
			}
		}
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

func ptr[T any](v T) *T { return &v }

// blocker is a handler that runs until released, to hold a job's lease.
type blocker struct {
	started chan *Run
	release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{started: make(chan *Run, 10), release: make(chan struct{})}
}

func (b *blocker) handler(ctx context.Context, run *Run) error {
	b.started <- run
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
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

func TestCatchUpRunsOnlyTheLatestMissedSlotInsideTheWindow(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		l := newLedger()
		job := Job{Name: "minutely", Schedule: "* * * * *", CatchUpWindow: 5 * time.Minute, Handler: l.handler(c.db)}
		t0 := c.db.Now() // 12:00:00, itself a slot: the first start catches it up
		a := c.start("a", 0, job)
		c.advance(time.Minute, 10*time.Second) // 12:01 runs normally
		c.stop(a)
		// A deploy: nobody runs for three minutes and a half.
		c.db.Advance(3*time.Minute + 30*time.Second)
		b := c.start("b", 0, job)
		missed := t0.Add(4 * time.Minute) // 12:04; 12:02 and 12:03 are history, not replayed
		for _, slot := range []time.Time{t0, t0.Add(time.Minute), missed} {
			if n := l.ran("minutely", slot); n != 1 {
				t.Fatalf("slot %s ran %d times, want once", slot.Format(time.TimeOnly), n)
			}
		}
		for _, slot := range []time.Time{t0.Add(2 * time.Minute), t0.Add(3 * time.Minute)} {
			if n := l.ran("minutely", slot); n != 0 {
				t.Fatalf("catch-up replayed slot %s", slot.Format(time.TimeOnly))
			}
		}
		runs, err := b.e.Store.RunList(context.Background(), store.RunListParams{Job: "minutely", Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		wantLine := fmt.Sprintf("Catch-up run for missed slot %s (30s late)", missed.Format(time.RFC3339))
		if len(runs) != 1 || !runs[0].CatchUp || len(runs[0].Logs) == 0 || !strings.Contains(runs[0].Logs[0], wantLine) {
			t.Fatalf("catch-up run row = %+v; want catch-up with first line %q", runs, wantLine)
		}
		// A restart right after: the latest slot is claimed, nothing extra.
		c.stop(b)
		c.start("c", 0, job)
		l.wantNoneTwiceOrEarly(t)
		l.mu.Lock()
		n := len(l.runs["minutely"])
		l.mu.Unlock()
		if n != 3 {
			t.Fatalf("%d slots ran after a quick restart, want 3", n)
		}

		// A slot missed longer ago than the window is not run.
		hourly := Job{Name: "hourly", Schedule: "@hourly", CatchUpWindow: 5 * time.Minute, Handler: l.handler(c.db)}
		c.stop(c.replicas[0])
		c.db.Advance(10 * time.Minute) // 12:14:30: 12:00 is 14.5 min ago
		c.start("d", 0, job, hourly)
		if n := l.ran("hourly", t0); n != 0 {
			t.Fatal("catch-up ran a slot older than its window")
		}
		if n := l.ran("minutely", t0.Add(14*time.Minute)); n != 1 {
			t.Fatalf("the latest missed minutely slot ran %d times, want once", n)
		}
	})
}

func TestShutdownReleasesLeaseAndHandsOver(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		b := newBlocker()
		job := Job{Name: "long", Schedule: "* * * * *", Handler: b.handler}
		s, err := New(Config{Store: c.open(t), Owner: "leaving", Logger: quiet, Clock: offsetClock{c.db, 0}, Retention: -1, ShutdownGrace: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Register(job); err != nil {
			t.Fatal(err)
		}
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		c.waitForTimers(1) // the loop's, after its first tick
		c.db.Advance(time.Minute)
		run := <-b.started
		// The deploy's deadline passes during the grace, before the
		// handler gives up by itself: Stop cancels it, and it still
		// finishes and releases.
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan error)
		go func() { stopped <- s.Stop(ctx) }()
		<-s.loop.done
		c.waitForTimers(2) // the lease's renewal and the grace
		cancel()
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
		l, err := s.e.Store.LeaseGet(context.Background(), "job:long")
		if err != nil || l.Generation != run.Generation || l.ExpiresAt.After(c.db.Now()) {
			t.Fatalf("after Stop the lease is %+v (%v); want generation %d released", l, err, run.Generation)
		}
	})
}

func TestBufferOneRunsTheOverlappedSlotWhenTheRunEnds(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		b := newBlocker()
		job := Job{Name: "long", Schedule: "* * * * *", Overlap: OverlapBufferOne, Handler: b.handler}
		c.start("a", 0, job)
		c.start("b", 0, job)
		t0 := c.db.Now()
		c.db.Advance(time.Minute)
		first := <-b.started
		c.settleHolding(1)
		c.db.Advance(time.Minute) // 12:02 is buffered
		c.settleHolding(1)
		c.db.Advance(time.Minute) // 12:03 is skipped: one is buffered already
		c.settleHolding(1)
		b.release <- struct{}{} // the first run ends...
		buffered := <-b.started // ...and the buffered slot runs at once
		if !first.Slot.Equal(t0.Add(time.Minute)) || !buffered.Slot.Equal(t0.Add(2*time.Minute)) || buffered.Origin != OriginBuffered {
			t.Fatalf("runs: first %s, then %s; want 12:01 then the buffered 12:02", first.Slot, buffered.Slot)
		}
		close(b.release)
		c.settle()
		skipped, err := c.replicas[0].e.Store.SlotGet(context.Background(), "long", t0.Add(3*time.Minute))
		if err != nil || skipped.Status != store.SlotSkipped {
			t.Fatalf("12:03 = %+v, %v; want skipped", skipped, err)
		}
	})
}

// The store goes away at a fire: the slot is not run (by default) but left
// to catch-up, which runs it once the store is back; a job that runs when
// the store is down (fail-open) runs without a lease.
func TestStoreOutageLeavesSlotToCatchUp(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster of its own")
	}
	t.Parallel()
	pg := pgtest.NewCluster(t)
	db := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC))
	pool, err := pgxpool.New(context.Background(), pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	st, err := postgres.New(pool, &postgres.Config{NowFunc: db.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, db: db, open: func(*testing.T) store.Store { return st }}
	l := newLedger()
	failOpen := make(chan *Run, 1)
	c.start("a", 0,
		Job{Name: "minutely", Schedule: "* * * * *", CatchUpWindow: 10 * time.Minute, Handler: l.handler(db)},
		Job{Name: "open", Schedule: "* * * * *", RunWhenStoreDown: true, Handler: func(_ context.Context, run *Run) error {
			failOpen <- run
			return nil
		}},
	)
	pg.Stop(t)
	c.advance(time.Minute, time.Minute) // 12:01 comes due with the store down
	if n := l.ran("minutely", time.Date(2026, 3, 1, 12, 1, 0, 0, time.UTC)); n != 0 {
		t.Fatal("a slot ran while the store was down")
	}
	if run := <-failOpen; run.Generation != 0 || run.Origin != OriginFailOpen || run.Fence(context.Background(), nil) == nil {
		t.Fatalf("fail-open run = %+v; want one without a lease (origin %s), whose fence refuses", run, OriginFailOpen)
	}
	pg.Start(t)
	// The next tick's probe finds the store back; catch-up then runs the
	// slot that fired while it was down, before the next slot comes due.
	c.advance(time.Second, time.Second)
	c.advance(time.Second, time.Second)
	missed := time.Date(2026, 3, 1, 12, 1, 0, 0, time.UTC)
	if n := l.ran("minutely", missed); n != 1 {
		t.Fatalf("the slot missed during the outage ran %d times after the store came back, want once", n)
	}
	runs, err := st.RunList(context.Background(), store.RunListParams{Job: "minutely", Limit: 1})
	if err != nil || len(runs) != 1 || !runs[0].CatchUp || !strings.HasPrefix(runs[0].Logs[0], "INFO Catch-up run for missed slot 2026-03-01T12:01:00Z") {
		t.Fatalf("catch-up run row = %+v, %v", runs, err)
	}
	c.advance(time.Minute, 10*time.Second) // 12:02 runs normally
	if n := l.ran("minutely", missed.Add(time.Minute)); n != 1 {
		t.Fatalf("12:02 ran %d times, want once", n)
	}
	l.wantNoneTwiceOrEarly(t)
}

func TestRetentionPrunesOnOneReplicaKeepingTheLatestClaim(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		st := c.open(t)
		day := 24 * time.Hour
		now := c.db.Now()
		writeDailyHistory(t, st, now)
		noop := func(context.Context, *Run) error { return nil }
		for _, name := range []string{"a", "b"} {
			c.startWith(Config{Owner: name, Clock: offsetClock{c.db, 0}, Retention: 7 * day},
				Job{Name: "daily", Schedule: "@daily", Handler: noop})
		}
		c.advance(time.Second, time.Second) // the first tick prunes, on one replica
		runs, err := st.RunList(context.Background(), store.RunListParams{Job: "daily"})
		if err != nil {
			t.Fatal(err)
		}
		// The runs 0.5 to 6.5 days old stay.
		if len(runs) != 7 {
			t.Fatalf("%d runs left after pruning, want the 7 younger than the retention", len(runs))
		}
		if _, err := st.SlotGet(context.Background(), "daily", now.Add(-10*day+12*time.Hour)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a 10-day-old claim survived: %v", err)
		}
	})
}

// writeDailyHistory writes ten days of a daily job's history: "daily"
// claimed and ran a slot each day at noon, 9.5 to 0.5 days before now.
func writeDailyHistory(t *testing.T, st store.Store, now time.Time) {
	t.Helper()
	for age := 10; age >= 1; age-- {
		at := now.Add(-time.Duration(age)*24*time.Hour + 12*time.Hour)
		r, err := st.SlotClaim(context.Background(), store.SlotClaimParams{
			Job: "daily", Slot: at, LeaseName: "job:daily", Owner: "old", TTL: time.Minute, MaxAttempts: 1, Now: at,
		})
		if err != nil || !r.Claimed {
			t.Fatal(r, err)
		}
		if _, err := st.SlotFinish(context.Background(), store.SlotFinishParams{
			Job: "daily", Slot: at, LeaseName: r.Lease.Name, Owner: "old", Generation: r.Lease.Generation,
			Status: store.SlotCompleted, Now: at, Run: store.Run{Success: true, StartedAt: at},
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// A handler that does not end by itself is cancelled when the shutdown
// grace passes, and its run still ends with the lease released.
func TestShutdownGraceCancelsStuckHandler(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		b := newBlocker()
		s := c.startWith(Config{Owner: "leaving", Clock: offsetClock{c.db, 0}, Retention: -1, ShutdownGrace: 30 * time.Second},
			Job{Name: "long", Schedule: "* * * * *", Handler: b.handler})
		c.db.Advance(time.Minute)
		run := <-b.started
		stopped := make(chan error)
		go func() { stopped <- s.Stop(context.Background()) }()
		<-s.loop.done // firing has stopped; the grace timer starts next
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.db.WaitForTimers(ctx, 2); err != nil { // the lease's renewal and the grace
			t.Fatal(err)
		}
		select {
		case <-stopped:
			t.Fatal("Stop returned before the grace passed while a handler ran")
		default:
		}
		c.db.Advance(30 * time.Second)
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
		l, err := s.e.Store.LeaseGet(context.Background(), "job:long")
		if err != nil || l.Generation != run.Generation || l.ExpiresAt.After(c.db.Now()) {
			t.Fatalf("after Stop the lease is %+v (%v); want generation %d released", l, err, run.Generation)
		}
		runs, err := s.e.Store.RunList(context.Background(), store.RunListParams{Job: "long"})
		if err != nil || len(runs) != 1 || runs[0].Success || !strings.Contains(runs[0].Error, "interrupted by shutdown") {
			t.Fatalf("run rows = %+v, %v; want one run, interrupted by the shutdown", runs, err)
		}
		// The slot was left running for a live replica to resume at once.
		c.replicas = nil
		b2 := newBlocker()
		close(b2.release)
		c.start("staying", 0, Job{Name: "long", Schedule: "* * * * *", Handler: b2.handler})
		c.advance(time.Second, time.Second)
		resumed := <-b2.started
		if !resumed.Slot.Equal(run.Slot) || resumed.Attempt != 2 {
			t.Fatalf("resumed run = %+v; want slot %s attempt 2", resumed, run.Slot)
		}
	})
}

// A program that stops on SIGTERM cancels the context it ran under and
// then calls Stop, often with that same context (defer sched.Stop(ctx)).
// A context already ended when Stop is called is not a deadline for it:
// the running handler keeps its context for the shutdown grace and
// finishes, and its run is recorded as a success, not cut short.
func TestStopWithACancelledContextGivesRunningHandlersTheGrace(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		b := newBlocker()
		s := c.startWith(Config{Owner: "leaving", Clock: offsetClock{c.db, 0}, Retention: -1, ShutdownGrace: 30 * time.Second},
			Job{Name: "long", Schedule: "* * * * *", Handler: b.handler})
		c.db.Advance(time.Minute)
		run := <-b.started
		c.settleHolding(1)

		ctx, cancel := context.WithCancel(context.Background())
		cancel() // SIGTERM arrived: the program's context is done
		stopped := make(chan error, 1)
		go func() { stopped <- s.Stop(ctx) }()
		<-s.loop.done // firing has stopped; Stop now waits for the handler
		timers := make(chan error, 1)
		wait, done := context.WithTimeout(context.Background(), 30*time.Second)
		defer done()
		go func() { timers <- c.db.WaitForTimers(wait, 2) }() // the lease's renewal and the grace
		select {
		case err := <-stopped:
			runs, _ := s.e.Store.RunList(context.Background(), store.RunListParams{Job: "long"})
			t.Fatalf("Stop(an ended context) returned (%v) at once, cancelling the running handler instead of giving it the grace; run rows: %+v", err, runs)
		case err := <-timers:
			if err != nil {
				t.Fatalf("Stop set no grace timer: %v", err)
			}
		}
		c.db.Advance(29 * time.Second) // inside the grace
		select {
		case err := <-stopped:
			t.Fatalf("Stop(an ended context) returned (%v) while the handler ran, inside the grace", err)
		default:
		}
		close(b.release) // the handler finishes by itself
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
		runs, err := s.e.Store.RunList(context.Background(), store.RunListParams{Job: "long"})
		if err != nil || len(runs) != 1 || !runs[0].Success || runs[0].Generation != run.Generation {
			t.Fatalf("run rows = %+v, %v; want the one run, successful: Stop with an ended context cancelled it instead of giving it the grace", runs, err)
		}
	})
}

// A run whose own replica loses its lease while it runs (here: another
// owner takes the lease and lets it go, as after renewals that could not
// reach the database until it expired) is cancelled, and its slot is left
// running for a replica to resume with one more attempt, not counted as
// failed — unless it was the slot's last attempt, which ends failed, since
// nothing could take the slot again.
func TestLostLeaseLeavesTheSlotToResume(t *testing.T) {
	for _, tc := range []struct {
		maxAttempts int
		resumed     bool
	}{
		{maxAttempts: 3, resumed: true},
		{maxAttempts: 1, resumed: false},
	} {
		t.Run(fmt.Sprintf("max_attempts=%d", tc.maxAttempts), func(t *testing.T) {
			eachStore(t, func(t *testing.T, c *cluster) {
				const ttl = 30 * time.Second
				b := newBlocker()
				close(b.release) // a resumed attempt succeeds at once
				first := make(chan *Run, 1)
				job := Job{Name: "victim", Schedule: "* * * * *", LeaseTTL: ttl, MaxAttempts: tc.maxAttempts,
					Handler: func(ctx context.Context, run *Run) error {
						if run.Attempt > 1 {
							return b.handler(ctx, run)
						}
						first <- run
						<-ctx.Done()
						return context.Cause(ctx)
					}}
				a := c.start("a", 0, job)
				c.start("b", 0, job)
				c.db.Advance(time.Minute)
				run := <-first // on either replica
				c.settleHolding(1)

				st := a.e.Store
				held, err := st.LeaseGet(context.Background(), "job:victim")
				if err != nil {
					t.Fatal(err)
				}
				other, ok, err := st.LeaseAcquire(context.Background(), store.LeaseAcquireParams{Name: "job:victim", Owner: "other", TTL: ttl, Now: held.ExpiresAt})
				if err != nil || !ok {
					t.Fatalf("takeover: %v, %v", ok, err)
				}
				if ok, err := st.LeaseRelease(context.Background(), other.Ref()); err != nil || !ok {
					t.Fatalf("release: %v, %v", ok, err)
				}
				// The holder's next renewal finds its lease gone, and its
				// run ends; the resume scans (every 500 ms) then find the
				// slot's run dead.
				c.db.Advance(ttl / 3)
				c.settle()
				c.advance(2*time.Second, 500*time.Millisecond)

				runs, err := st.RunList(context.Background(), store.RunListParams{Job: "victim"})
				if err != nil {
					t.Fatal(err)
				}
				slot, err := st.SlotGet(context.Background(), "victim", run.Slot)
				if err != nil {
					t.Fatal(err)
				}
				if !tc.resumed {
					if slot.Status != store.SlotFailed || slot.Attempts != 1 || len(runs) != 1 || runs[0].Success ||
						!strings.Contains(runs[0].Error, "lease") {
						t.Fatalf("last attempt: slot %+v, runs %+v; want the slot failed after 1 attempt, one failed run naming the lease", slot, runs)
					}
					return
				}
				if slot.Status != store.SlotCompleted || slot.Attempts != 2 {
					t.Fatalf("slot %+v; want completed at attempt 2", slot)
				}
				// The resume may start before the cut-short run has ended: the
				// slot's lease moved on, so its run was dead already.
				byAttempt := map[int]store.Run{}
				for _, r := range runs {
					byAttempt[r.Attempt] = r
				}
				cut, again := byAttempt[1], byAttempt[2]
				if len(runs) != 2 || !again.Success || cut.Success ||
					!strings.Contains(cut.Error, "interrupted by lease loss, left for a replica to resume") ||
					strings.Count(cut.Error, "lease lost") != 1 || !cut.FinishedAt.Equal(held.AcquiredAt.Add(ttl/3)) {
					t.Fatalf("runs = %+v; want attempt 1 interrupted by lease loss (said once, ended at the renewal), attempt 2 successful", runs)
				}
				if resumed := <-b.started; !resumed.Slot.Equal(run.Slot) || resumed.Generation <= other.Generation {
					t.Fatalf("resumed run %+v; want slot %s at a generation above %d", resumed, run.Slot, other.Generation)
				}
			})
		})
	}
}

// The resume scan leaves a dead slot that has used all its attempts alone
// (claiming it would be refused on every scan) and resumes an older dead
// slot of the same job that has attempts left, which the newer one used to
// hide.
func TestResumeSkipsSlotsOutOfAttempts(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		st := c.open(t)
		start := c.db.Now() // 12:00
		older, newer := start.Add(-2*time.Minute), start.Add(-time.Minute)
		claim := func(slot time.Time, at time.Duration) {
			t.Helper()
			r, err := st.SlotClaim(context.Background(), store.SlotClaimParams{
				Job: "victim", Slot: slot, LeaseName: "job:victim", Owner: "dead", TTL: time.Second, MaxAttempts: 3,
				Now: newer.Add(at),
			})
			if err != nil || !r.Claimed {
				t.Fatalf("claim of %s: %+v, %v", slot.Format(time.TimeOnly), r, err)
			}
		}
		// A dead owner ran the older slot once and the newer one three
		// times, each run dying with its lease (TTL 1 s).
		claim(older, 0)
		claim(newer, 2*time.Second)
		claim(newer, 4*time.Second)
		claim(newer, 6*time.Second)

		l := newLedger()
		rec := &recorder{}
		c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: -1, Observer: rec},
			Job{Name: "victim", Schedule: "* * * * *", MaxAttempts: 3, Handler: l.handler(c.db)})
		c.advance(2*time.Second, 500*time.Millisecond)

		if n := l.ran("victim", older); n != 1 {
			t.Errorf("older slot (1 attempt of 3 used) ran %d times, want resumed once", n)
		}
		if n := l.ran("victim", newer); n != 0 {
			t.Errorf("newer slot (3 attempts of 3 used) ran %d times, want never", n)
		}
		for _, e := range rec.take() {
			if ce, ok := e.(ClaimEvent); ok && ce.Origin == OriginResume && ce.Slot.Equal(newer) {
				t.Errorf("the resume scan claimed the slot out of attempts: %+v", ce)
			}
		}
		if sl, err := st.SlotGet(context.Background(), "victim", older); err != nil || sl.Status != store.SlotCompleted || sl.Attempts != 2 {
			t.Errorf("older slot = %+v, %v; want completed at attempt 2", sl, err)
		}
	})
}

// A resume pass whose claim meets a lease row held FOR KEY SHARE — a
// deposed writer frozen inside its fenced transaction — does not hold up
// the fires of other jobs: "tick" runs its slot while "frozen"'s dead run
// cannot be taken over, and the run is resumed by the first scan after the
// writer's transaction ends. (On SQLite a frozen writer holds the file's
// one write lock, and every write waits for it.)
func TestResumeOfAFrozenWritersRunDoesNotHoldUpFires(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		needRowLocks(t, c)
		ctx := context.Background()
		st := c.open(t)
		start := c.db.Now()
		dead := start.Add(-time.Minute)
		_, tx := frozenWriter(t, st, dead, 3)

		l := newLedger()
		c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: -1},
			Job{Name: "frozen", Schedule: "0 0 1 1 *", Handler: l.handler(c.db)},
			Job{Name: "tick", Schedule: "* * * * *", Handler: l.handler(c.db)})
		// A minute on, the lease has expired: the resume pass's claim of the
		// dead run's slot is refused lease_busy; tick's slot comes due.
		c.db.Advance(time.Minute)
		slot := start.Add(time.Minute)
		c.settle() // nothing waits: not the fires, not the resume pass
		if n := l.ran("tick", slot); n != 1 {
			t.Fatalf("tick's slot ran %d times while a resume claim met another job's fenced lease row, want 1", n)
		}
		if n := l.ran("frozen", dead); n != 0 {
			t.Fatalf("the frozen writer's slot ran %d times while its transaction held the lease row", n)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		c.advance(time.Second, time.Second) // the next resume scan
		if n := l.ran("frozen", dead); n != 1 {
			t.Fatalf("the dead run's slot ran %d times after the writer's transaction ended, want resumed once", n)
		}
	})
}

// needRowLocks skips the test on SQLite, which has no row locks: a fenced
// transaction there holds the file's one write lock, and every write, a
// frozen writer's included, waits for it.
func needRowLocks(t *testing.T, c *cluster) {
	t.Helper()
	if c.kind != "postgres" {
		t.Skip("SQLite has no row locks: a fenced transaction holds up every write")
	}
}

// frozenWriter claims job "frozen"'s slot dead as owner "dead" (a 90 s
// lease) and opens the dead owner's fenced transaction, left open as if
// its writer froze inside it: the lease row is held FOR KEY SHARE until
// the test ends the transaction (or its cleanup rolls it back).
func frozenWriter(t *testing.T, st store.Store, dead time.Time, maxAttempts int) (store.SlotClaimResult, pgx.Tx) {
	t.Helper()
	ctx := context.Background()
	r, err := st.SlotClaim(ctx, store.SlotClaimParams{
		Job: "frozen", Slot: dead, LeaseName: "job:frozen", Owner: "dead", TTL: 90 * time.Second, MaxAttempts: maxAttempts, Now: dead,
	})
	if err != nil || !r.Claimed {
		t.Fatalf("claim: %+v, %v", r, err)
	}
	tx, err := st.(*postgres.Store).Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	if err := st.LeaseFence(ctx, tx, "job:frozen", r.Lease.Generation); err != nil {
		t.Fatal(err)
	}
	return r, tx
}

// The fire of a job whose lease a deposed writer still holds, frozen
// inside its fenced transaction after the lease expired, shares its batch
// with every job due at that instant. The takeover must wait for the
// writer; the others must not: "tick" runs its slot, and "frozen"'s slot,
// tried again beside the loop, runs once the writer's transaction ends.
func TestFireOfAFrozenWritersJobDoesNotHoldUpOthers(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		needRowLocks(t, c)
		ctx := context.Background()
		st := c.open(t)
		start := c.db.Now()
		dead := start.Add(-time.Minute)
		r, tx := frozenWriter(t, st, dead, 1)

		l := newLedger()
		c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: -1},
			Job{Name: "frozen", Schedule: "* * * * *", MaxAttempts: 1, Handler: l.handler(c.db)},
			Job{Name: "tick", Schedule: "* * * * *", Handler: l.handler(c.db)})
		slot := start.Add(time.Minute)
		c.advance(time.Minute, time.Minute) // both due, in one batch
		if n := l.ran("tick", slot); n != 1 {
			t.Fatalf("tick's slot ran %d times while the batch held a claim of a frozen writer's lease, want 1", n)
		}
		c.advance(2*time.Second, 500*time.Millisecond) // retries, refused while the writer is inside
		if n := l.ran("frozen", slot); n != 0 {
			t.Fatalf("frozen's slot ran %d times while the deposed writer's transaction held its lease", n)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		c.advance(time.Second, 500*time.Millisecond) // the next retry
		if n := l.ran("frozen", slot); n != 1 {
			t.Fatalf("frozen's slot ran %d times after the writer's transaction ended, want once", n)
		}
		c.wantNeverDown()
		if got, err := st.LeaseGet(ctx, "job:frozen"); err != nil || got.Generation != r.Lease.Generation+1 {
			t.Fatalf("frozen's lease = %+v, %v; want taken over at generation %d", got, err, r.Lease.Generation+1)
		}
	})
}

// A catch-up claim at start-up meets a lease a deposed writer still fences:
// it is refused lease_busy, tried again beside the loop, and run, as a
// catch-up, once the writer's transaction ends.
func TestCatchUpOfAFrozenWritersJobRunsOnceItEnds(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		needRowLocks(t, c)
		ctx := context.Background()
		st := c.open(t)
		_, tx := frozenWriter(t, st, c.db.Now().Add(-time.Minute), 1)
		c.db.Advance(time.Minute) // the writer froze; its lease expired 30 s ago
		start := c.db.Now()
		var mu sync.Mutex
		var catchUps []time.Time
		job := Job{Name: "frozen", Schedule: "* * * * *", MaxAttempts: 1, CatchUpWindow: 5 * time.Minute,
			Handler: func(ctx context.Context, run *Run) error {
				mu.Lock()
				defer mu.Unlock()
				if run.Origin == OriginCatchUp {
					catchUps = append(catchUps, run.Slot)
				}
				return nil
			}}
		rec := &recorder{}
		c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: -1, Observer: rec}, job)
		c.advance(2*time.Second, 500*time.Millisecond) // retries, refused while the writer is inside
		mu.Lock()
		n := len(catchUps)
		mu.Unlock()
		if n != 0 {
			t.Fatalf("%d catch-up runs while the deposed writer's transaction held the lease", n)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		c.advance(time.Second, 500*time.Millisecond)
		c.wantNeverDown()
		mu.Lock()
		defer mu.Unlock()
		if len(catchUps) != 1 || !catchUps[0].Equal(start) {
			t.Fatalf("catch-up runs %v after the writer's transaction ended; want one, of slot %s", catchUps, start)
		}
		// Every claim of the slot, the retries included, is a catch-up's.
		claims := 0
		for _, e := range rec.take() {
			if ce, ok := e.(ClaimEvent); ok && ce.Job == "frozen" {
				claims++
				if ce.Origin != OriginCatchUp {
					t.Errorf("claim of the catch-up slot %s (won %v, refusal %q) has origin %q, want %q", ce.Slot, ce.Won, ce.Refusal, ce.Origin, OriginCatchUp)
				}
			}
		}
		if claims < 3 {
			t.Fatalf("%d claims of the catch-up slot; want the first, its retries and the winner", claims)
		}
	})
}

// A run that died on its job's last attempt (its process killed, say) can
// be claimed by nobody again: the resume scan ends its slot failed, with a
// run row saying why, once across replicas, instead of leaving it running
// for good; and the slot that waited for it (buffer-one) runs then.
func TestDeadRunOnItsLastAttemptEndsFailed(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		ctx := context.Background()
		st := c.open(t)
		start := c.db.Now()
		dead := start.Add(-2 * time.Minute)
		claim := func(slot time.Time, owner string, now time.Time) store.SlotClaimResult {
			t.Helper()
			r, err := st.SlotClaim(ctx, store.SlotClaimParams{
				Job: "once", Slot: slot, LeaseName: "job:once", Owner: owner, TTL: 30 * time.Second, MaxAttempts: 2,
				Overlap: store.OverlapBuffer, Now: now, RetryFailed: true, // the second attempt retries the first
			})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		first := claim(dead, "dead", dead)
		if _, err := st.SlotFinish(ctx, store.SlotFinishParams{Job: "once", Slot: dead, LeaseName: "job:once", Owner: "dead",
			Generation: first.Lease.Generation, Status: store.SlotFailed, Now: dead.Add(time.Second),
			Run: store.Run{Attempt: 1, Error: "exit status 1"}}); err != nil {
			t.Fatal(err)
		}
		// The second, last attempt dies mid-way; the next slot, overlapping
		// it, waits buffered.
		last := claim(dead, "dead", dead.Add(5*time.Second))
		next := dead.Add(10 * time.Second)
		if r := claim(next, "dead", next); r.Claimed || r.Recorded != store.SlotBuffered {
			t.Fatalf("the next slot's claim = %+v; want it buffered behind the dying run", r)
		}
		if !last.Claimed || last.Slot.Attempts != 2 {
			t.Fatalf("last attempt's claim = %+v", last)
		}

		l := newLedger()
		job := Job{Name: "once", Schedule: "0 0 1 1 *", MaxAttempts: 2, LeaseTTL: 30 * time.Second, Overlap: OverlapBufferOne, Handler: l.handler(c.db)}
		c.start("a", 0, job)
		c.start("b", 0, job)
		c.advance(time.Second, time.Second) // a resume scan on each replica
		c.wantNeverDown()

		sl, err := st.SlotGet(ctx, "once", dead)
		if err != nil || sl.Status != store.SlotFailed || sl.Attempts != 2 || sl.FinishedAt.IsZero() {
			t.Fatalf("the dead slot = %+v, %v; want failed after its 2 attempts", sl, err)
		}
		if n := l.ran("once", dead); n != 0 {
			t.Errorf("the dead slot ran %d more times with no attempt left", n)
		}
		if n := l.ran("once", next); n != 1 {
			t.Errorf("the buffered slot ran %d times once the dead run was ended, want 1", n)
		}
		runs, err := st.RunList(ctx, store.RunListParams{Job: "once"})
		if err != nil {
			t.Fatal(err)
		}
		var ended []store.Run
		for _, r := range runs {
			if r.Slot.Equal(dead) && r.Attempt == 2 {
				ended = append(ended, r)
			}
		}
		if len(ended) != 1 || ended[0].Success || ended[0].Owner != "dead" || !strings.Contains(ended[0].Error, "last attempt (2 of 2)") ||
			len(ended[0].Logs) != 1 || !strings.Contains(ended[0].Logs[0], "no attempt is left") {
			t.Fatalf("run rows of the last attempt = %+v; want one, failed, saying it died on its last attempt", ended)
		}
	})
}

// A handler may keep its fenced transaction open for its whole run, here
// three lease TTLs and the job's next three slots. Meanwhile its replica
// renews the lease (the fence's row lock does not hold renewals up), so the
// other replica never takes the run over; each overlapping slot is
// refused at once, so "tick", fired in the same batches, runs every slot;
// and the transaction commits at the end under its own generation.
func TestLongFencedTransactionHoldsNothingUp(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		needRowLocks(t, c)
		ctx := context.Background()
		pg := c.open(t).(*postgres.Store)
		pool, writes := pg.Pool(), pgx.Identifier{pg.Schema(), "long_writes"}.Sanitize()
		if _, err := pool.Exec(ctx, `CREATE TABLE `+writes+` (slot timestamptz, generation bigint)`); err != nil {
			t.Fatal(err)
		}
		started, release, committed := make(chan *Run, 4), make(chan struct{}), make(chan error, 4)
		long := func(ctx context.Context, run *Run) error {
			tx, err := pool.Begin(ctx)
			if err != nil {
				return err
			}
			defer func() { _ = tx.Rollback(context.Background()) }()
			if err := run.Fence(ctx, tx); err != nil {
				return err
			}
			started <- run
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+writes+` VALUES ($1, $2)`, run.Slot, run.Generation); err != nil {
				return err
			}
			err = tx.Commit(ctx)
			committed <- err
			return err
		}
		l := newLedger()
		jobs := []Job{{Name: "long", Schedule: "* * * * *", LeaseTTL: 50 * time.Second, Handler: long},
			{Name: "tick", Schedule: "* * * * *", Handler: l.handler(c.db)}}
		// b starts once a's run holds the lease: a claim that races the
		// winner of the very slot it fences may still wait for the fenced
		// transaction (see finding 14 in docs/reliability.md); the slots
		// after it must not.
		c.start("a", 0, jobs...)
		start := c.db.Now()
		c.db.Advance(time.Minute)
		run := <-started
		c.settleHolding(1)
		c.startHolding(1, Config{Owner: "b", Clock: offsetClock{c.db, 0}, Retention: -1}, jobs...)
		// Three more minutes in steps of a renewal period: the held run is
		// renewed at each, and long's slots come due beside tick's.
		for range 9 {
			c.db.Advance(20 * time.Second)
			c.settleHolding(1)
		}
		close(release)
		if err := <-committed; err != nil {
			t.Fatalf("the fenced transaction's commit after three TTLs: %v", err)
		}
		c.settle()
		c.wantNeverDown()
		select {
		case r := <-started:
			t.Fatalf("long's run was started again (slot %s, by %s) while the first held its lease", r.Slot, r.Owner)
		default:
		}
		l.wantEachOnce(t, "tick", start.Add(time.Minute), c.db.Now().Add(time.Second), time.Minute)
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+writes+` WHERE generation = $1`, run.Generation).Scan(&n); err != nil || n != 1 {
			t.Fatalf("fenced writes at generation %d = %d, %v; want 1", run.Generation, n, err)
		}
		runs, err := c.replicas[0].e.Store.RunList(ctx, store.RunListParams{Job: "long"})
		if err != nil {
			t.Fatal(err)
		}
		var skips int
		for _, r := range runs {
			switch {
			case r.Skipped && r.Reason == "already_executing":
				skips++
			case r.Skipped || !r.Success || r.Generation != run.Generation:
				t.Errorf("long's run row %+v; want its one run, successful at generation %d", r, run.Generation)
			}
		}
		if skips != 3 {
			t.Errorf("long's overlapping slots: %d skip rows, want 3", skips)
		}
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

// A handler's plain error is recorded as it is: not decorated with the
// cancellation that ending the run's lease hold causes afterwards.
func TestFailedRunRecordsTheHandlersError(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		job := Job{Name: "failing", Schedule: "* * * * * *", Handler: func(_ context.Context, run *Run) error {
			run.Logger.Info("working")
			return errors.New("exit status 3")
		}}
		s := c.start("a", 0, job)
		c.advance(time.Second, time.Second)
		runs, err := s.e.Store.RunList(context.Background(), store.RunListParams{Job: "failing"})
		if err != nil || len(runs) != 1 {
			t.Fatalf("runs = %+v, %v", runs, err)
		}
		if r := runs[0]; r.Success || r.Error != "exit status 3" || len(r.Logs) != 1 || !strings.Contains(r.Logs[0], "working") {
			t.Fatalf("run row = %+v; want the handler's error as is and only its own log line", r)
		}
	})
}
