package cronfence

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A job added at 12:29:34 with a catch-up window does not run its 12:29:00
// slot: it did not exist then (a Kubernetes CronJob created at 12:29:34 does
// not either). Its first registration is recorded, on every replica's
// behalf, so a replica started later, after a slot was missed while none
// ran, does catch that slot up.
func TestCatchUpNeverRunsASlotFromBeforeTheJobExisted(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		l := newLedger()
		job := Job{Name: "minutely", Schedule: "* * * * *", CatchUpWindow: time.Hour, Handler: l.handler(c.db)}
		c.db.Advance(29*time.Minute + 34*time.Second) // 12:29:34
		a := c.start("a", 0, job)
		c.start("b", 0, job) // a second replica, a second later in spirit: the same answer
		if n := l.ran("minutely", c.db.Now().Truncate(time.Minute)); n != 0 {
			t.Fatalf("the new job ran its 12:29 slot, from before it existed, %d times", n)
		}
		c.advance(26*time.Second, time.Second) // 12:30 runs normally
		if n := l.ran("minutely", c.db.Now()); n != 1 {
			t.Fatalf("12:30 ran %d times, want once", n)
		}
		c.stop(a)
		c.stop(c.replicas[0])
		c.db.Advance(90 * time.Second) // 12:31:30: nobody ran 12:31
		c.start("c", 0, job)
		missed := c.db.Now().Truncate(time.Minute)
		if n := l.ran("minutely", missed); n != 1 {
			t.Fatalf("the slot missed while no replica ran (12:31) ran %d times at the next start, want once", n)
		}
		l.wantNoneTwiceOrEarly(t)
	})
}

// The store comes back at the very tick the next slot fires. The slot
// missed during the outage is claimed first, by catch-up, and runs once;
// the next slot, due while that catch-up run held the job's lease, is no
// overlap (the lease was free when it came due) and runs once too, after
// it. Nothing is recorded skipped. (Before: the next slot was claimed
// first, and the catch-up met its run and was recorded as an overlap skip
// naming its own replica; the missed slot never ran.)
func TestCatchUpAfterAnOutageRunsTheMissedSlotBesideTheNext(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster of its own")
	}
	t.Parallel()
	pg := pgtest.NewCluster(t)
	db := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC))
	c := &cluster{t: t, db: db, kind: "postgres", open: func(t *testing.T) store.Store {
		pool, err := pgxpool.New(context.Background(), pg.URL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		st, err := postgres.New(pool, &postgres.Config{NowFunc: db.Now})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		return st
	}}
	l := newLedger()
	missedSlot := time.Date(2026, 3, 1, 12, 1, 0, 0, time.UTC)
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	held := func(ctx context.Context, run *Run) error {
		if err := l.handler(db)(ctx, run); err != nil {
			return err
		}
		if !run.Slot.Before(missedSlot) {
			<-release // the first run after the outage still runs when the other slot's claims come
		}
		return nil
	}
	job := Job{Name: "minutely", Schedule: "* * * * *", CatchUpWindow: 10 * time.Minute, Handler: held}
	a := c.start("a", 0, job)
	c.start("b", 0, job)
	pg.Stop(t)
	c.advance(30*time.Second, 30*time.Second) // 12:01 fires with the store down: left to catch-up
	pg.Start(t)
	// One tick, at 12:02:00.5: the store is back, and 12:02 is due.
	db.Advance(time.Minute + 500*time.Millisecond)
	c.settleHolding(1)
	once.Do(func() { close(release) })
	c.settle()

	missed, next := time.Date(2026, 3, 1, 12, 1, 0, 0, time.UTC), time.Date(2026, 3, 1, 12, 2, 0, 0, time.UTC)
	for _, slot := range []time.Time{missed, next} {
		if n := l.ran("minutely", slot); n != 1 {
			t.Fatalf("slot %s ran %d times, want once", slot.Format(time.TimeOnly), n)
		}
	}
	runs, err := a.e.Store.RunList(context.Background(), store.RunListParams{Job: "minutely"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.Skipped {
			t.Fatalf("a skip was recorded: %+v", r)
		}
	}
	l.wantNoneTwiceOrEarly(t)
}

// The database accepts connections but stops answering (a proxy that
// holds every byte: a hung server, a lock, a half-open network). A claim
// is bounded by Config.StoreTimeout: once it passes, the store counts as
// down, as if it refused connections. The fail-open job runs, without a
// lease, with a warning; the other job's slot is left to catch-up and runs
// once the database answers again; the failure and the recovery are logged
// once each. (Before: the claim blocked the scheduling loop with no
// deadline, so nothing ran and nothing was logged while it hung.)
func TestHungStoreCountsAsDownAfterTheStoreTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs PostgreSQL")
	}
	t.Parallel()
	c, _, throughProxy, proxy := proxiedCluster(t)
	db := c.db
	l := newLedger()
	var openRuns atomic.Int32
	jobs := []Job{
		{Name: "minutely", Schedule: "* * * * *", CatchUpWindow: 10 * time.Minute, LeaseTTL: 3 * time.Second, Handler: l.handler(db)},
		{Name: "open", Schedule: "* * * * *", RunWhenStoreDown: true, Handler: func(ctx context.Context, run *Run) error {
			if run.Generation == 0 {
				openRuns.Add(1)
			}
			return nil
		}},
	}
	logs := &syncBuffer{}
	// A short bound (real time: it bounds how long the database takes to
	// answer), so the test waits for it only briefly.
	const timeout = 300 * time.Millisecond
	a := c.startWith(Config{Owner: "a", Clock: offsetClock{db, 0}, Retention: -1, HeartbeatEvery: -1, StoreTimeout: timeout,
		Store: intercept(throughProxy), Logger: slog.New(slog.NewTextHandler(logs, nil))}, jobs...)
	proxy.Hold()
	slot := db.Now().Add(time.Minute)
	db.Advance(time.Minute) // 12:01 fires; the claim hangs until its bound
	hung := time.Now()
	for openRuns.Load() == 0 {
		if time.Since(hung) > 30*time.Second {
			t.Fatalf("the fail-open job did not run while the claim hung; log:\n%s", logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := l.ran("minutely", slot); n != 0 {
		t.Fatalf("minutely ran while the store hung")
	}
	proxy.Release()
	// The next ticks probe the store, find it back and catch the slot up.
	// The hung claim's bytes may still reach the server once released and
	// commit there, its answer lost: the slot is then this replica's,
	// running under a lease nobody renews, and the scan for dead runs
	// resumes it once that lease expires (the job's short TTL). Either way
	// it runs once.
	c.advance(10*time.Second, 500*time.Millisecond)
	if n := l.ran("minutely", slot); n != 1 {
		sl, err := a.e.Store.SlotGet(context.Background(), "minutely", slot)
		t.Fatalf("the missed slot ran %d times, want once (slot %+v, %v); log:\n%s", n, sl, err, logs.String())
	}
	down, up := strings.Count(logs.String(), "the store is unreachable; slots are left to catch-up"), strings.Count(logs.String(), "the store is reachable again")
	if down < 1 || down != up {
		t.Fatalf("the outage was logged %d times and the recovery %d; want each outage's start and end once:\n%s", down, up, logs.String())
	}
	// One success for the missed slot; before it, when the hung claim
	// committed, that claim's attempt, recorded interrupted as it was
	// found dead.
	runs, err := a.e.Store.RunList(context.Background(), store.RunListParams{Job: "minutely"})
	successes, others := 0, 0
	for _, r := range runs {
		switch {
		case !r.Slot.Equal(slot):
		case r.Success:
			successes++
		case r.Reason != store.ReasonInterrupted || r.Attempt != 1:
			others++
		}
	}
	if err != nil || successes != 1 || others != 0 || !runs[0].Success {
		t.Fatalf("minutely's run rows = %+v, %v; want one success for the missed slot (after its hung claim's attempt, interrupted, if it committed)", runs, err)
	}
}

// A database outage is logged once when it starts, then at most once a
// minute while it lasts, and its end once, for every message it would
// repeat (the clock probe, the claims, the heartbeat, the resume scan,
// the absence checks, the fail-open runs' records, ...): docs/scheduler.md
// promises the failure is logged once, and an operator must not find a
// line a second. Here a replica's connections go through a proxy that
// refuses them for three minutes (the shared server is not touched).
func TestStoreOutageIsLoggedOnceThenAtMostEveryMinute(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs PostgreSQL")
	}
	t.Parallel()
	c, _, throughProxy, proxy := proxiedCluster(t)
	logs := &lineCounter{n: map[string]int{}}
	jobs := []Job{
		{Name: "tick", Schedule: "* * * * * *", Handler: nopHandler},
		{Name: "open", Schedule: "* * * * * *", RunWhenStoreDown: true, Handler: nopHandler},
		{Name: "hourly", Schedule: "@hourly", CatchUpWindow: time.Hour, Handler: nopHandler},
	}
	c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Store: throughProxy, Logger: slog.New(logs)}, jobs...)
	c.advance(20*time.Second, time.Second) // a heartbeat, an absence check and a prune behind it

	logs.reset()
	proxy.Cut()
	const outage = 3 * time.Minute
	c.advance(outage, time.Second)
	during := logs.reset()
	proxy.Restore()
	c.advance(30*time.Second, time.Second)
	after := logs.reset()

	// Once at the start and once a minute after: four lines in three
	// minutes at most, of each message. A run's own end is a line per run.
	limit := 1 + int(outage/time.Minute)
	for msg, n := range during {
		if n > limit && msg != "cronfence: run ended" {
			t.Errorf("%q logged %d times in a %s outage, want at most %d (once, then once a minute)", msg, n, outage, limit)
		}
	}
	if during["cronfence: the store is unreachable; slots are left to catch-up"] == 0 {
		t.Errorf("the outage was not logged; lines: %v", during)
	}
	if n := after["cronfence: the store is reachable again; catching up"]; n != 1 {
		t.Errorf("the recovery was logged %d times, want once; lines after: %v", n, after)
	}
	for msg, n := range during {
		if strings.HasPrefix(msg, "cronfence: ") {
			t.Logf("%3d× %s", n, msg)
		}
	}
}

// lineCounter is a slog handler that counts records by message.
type lineCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (l *lineCounter) Enabled(_ context.Context, level slog.Level) bool {
	return level >= slog.LevelInfo
}

func (l *lineCounter) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n[r.Message]++
	return nil
}

func (l *lineCounter) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *lineCounter) WithGroup(string) slog.Handler      { return l }

// reset returns the counts so far and starts again from zero.
func (l *lineCounter) reset() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.n
	l.n = map[string]int{}
	return n
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
