package cronfence

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/internal/mytest"
	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/mysql"
	"github.com/cronfence/cronfence/store/postgres"
	"github.com/cronfence/cronfence/store/sqlite"
	"github.com/jackc/pgx/v5"
)

// A cluster is n schedulers, each with its own store (its own connections)
// on one database, and one fake clock standing for the database clock. Each
// replica's clock is that clock plus its offset, so skewed replicas are
// injected too, and the test moves all time by hand.
type cluster struct {
	t        *testing.T
	kind     string // the store: "postgres" or "sqlite"
	db       *clock.Fake
	open     func(t *testing.T) store.Store
	replicas []*Scheduler
	// settleWithin bounds each wait for the replicas to settle; zero means
	// 30s. A safety net, not a measurement: a test whose replicas do much
	// work per step (thousands of runs) sets it higher.
	settleWithin time.Duration
}

// storeOpeners open stores on one fresh database per test, with the
// database clock pinned to the cluster's.
var storeOpeners = []struct {
	name string
	open func(t *testing.T, now func() time.Time) func(t *testing.T) store.Store
}{
	{"postgres", func(t *testing.T, now func() time.Time) func(t *testing.T) store.Store {
		_, schema := pgtest.Schema(t)
		return func(t *testing.T) store.Store {
			s, err := postgres.New(pgtest.NewPool(t), &postgres.Config{Schema: schema, NowFunc: now})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
			return s
		}
	}},
	{"mysql", func(t *testing.T, now func() time.Time) func(t *testing.T) store.Store {
		url := mytest.Database(t)
		return func(t *testing.T) store.Store {
			s, err := mysql.Open(context.Background(), url, &mysql.Config{NowFunc: now})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			if err := s.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
			return s
		}
	}},
	{"sqlite", func(t *testing.T, now func() time.Time) func(t *testing.T) store.Store {
		path := filepath.Join(t.TempDir(), "cronfence.db")
		return func(t *testing.T) store.Store {
			s, err := sqlite.Open(context.Background(), path, &sqlite.Config{NowFunc: now})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			if err := s.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
			return s
		}
	}},
}

// eachStore runs test once per store, in parallel. A fixed, whole-minute
// start keeps slot arithmetic readable.
func eachStore(t *testing.T, test func(t *testing.T, c *cluster)) {
	eachStoreFrom(t, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), test)
}

// eachStoreFrom is eachStore with the cluster's clock starting at start:
// near the real time for a test whose SQL reads the database's own clock
// (complete() and fence() do), which the pinned clock does not move.
func eachStoreFrom(t *testing.T, start time.Time, test func(t *testing.T, c *cluster)) {
	for _, o := range storeOpeners {
		t.Run(o.name, func(t *testing.T) {
			t.Parallel()
			db := clock.NewFake(start)
			c := &cluster{t: t, db: db, kind: o.name}
			c.open = o.open(t, db.Now)
			test(t, c)
		})
	}
}

// offsetClock is the cluster clock seen by a replica whose clock is off.
type offsetClock struct {
	base   *clock.Fake
	offset time.Duration
}

func (o offsetClock) Now() time.Time                       { return o.base.Now().Add(o.offset) }
func (o offsetClock) NewTimer(d time.Duration) clock.Timer { return o.base.NewTimer(d) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
var _ = os.Stderr

// start builds, registers jobs on and starts one replica.
func (c *cluster) start(name string, offset time.Duration, jobs ...Job) *Scheduler {
	c.t.Helper()
	return c.startWith(Config{Owner: name, Clock: offsetClock{c.db, offset}, Retention: -1}, jobs...)
}

// startWith is start with a config of the test's own; Logger and, unless
// the test gives one, Store are filled in.
func (c *cluster) startWith(cfg Config, jobs ...Job) *Scheduler {
	c.t.Helper()
	return c.startHolding(0, cfg, jobs...)
}

// startHolding is startWith while held handlers are deliberately blocked
// (see settleHolding); with held < 0 it does not wait for the replicas to
// settle at all (a run of theirs waits on the clock).
func (c *cluster) startHolding(held int, cfg Config, jobs ...Job) *Scheduler {
	c.t.Helper()
	if cfg.Store == nil {
		cfg.Store = c.open(c.t)
	}
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	s, err := New(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	for _, j := range jobs {
		if err := s.Register(j); err != nil {
			c.t.Fatal(err)
		}
	}
	if err := s.Start(context.Background()); err != nil {
		c.t.Fatal(err)
	}
	c.replicas = append(c.replicas, s)
	c.t.Cleanup(func() {
		// A handler still blocked at the end is cancelled, not waited for.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Stop(ctx)
	})
	if held >= 0 {
		c.settleHolding(held)
	}
	return s
}

// registered records the jobs' first registration at the cluster's now, as
// a replica that ran them earlier and stopped did.
func (c *cluster) registered(jobs ...string) {
	c.t.Helper()
	if _, err := c.open(c.t).JobRegister(context.Background(), store.JobRegisterParams{Jobs: jobs}); err != nil {
		c.t.Fatal(err)
	}
}

// wantNeverDown fails if a replica ever took the store for unreachable: in
// these tests it never is, so a claim that failed is a bug (a malformed
// batch, say).
func (c *cluster) wantNeverDown() {
	c.t.Helper()
	for _, s := range c.replicas {
		s.claimer.mu.Lock()
		down, missed := s.claimer.outage.down, len(s.claimer.outage.missed)
		s.claimer.mu.Unlock()
		if down || missed > 0 {
			c.t.Fatalf("replica %s saw the store as down (missed %d slots)", s.e.cfg.Owner, missed)
		}
	}
}

// stop stops a replica and forgets it.
func (c *cluster) stop(s *Scheduler) {
	c.t.Helper()
	if err := s.Stop(context.Background()); err != nil {
		c.t.Fatal(err)
	}
	for i, r := range c.replicas {
		if r == s {
			c.replicas = append(c.replicas[:i], c.replicas[i+1:]...)
		}
	}
}

// waitForTimers waits until n timers wait on the cluster's clock. A test
// that starts a replica of its own, outside start, moves the clock only
// once its loop sleeps on its timer: a loop that read the clock before the
// move and set its timer after it would set it late by the move.
func (c *cluster) waitForTimers(n int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.db.WaitForTimers(ctx, n); err != nil {
		c.t.Fatalf("%d timers on the clock, want %d: the loop did not go to sleep", c.db.Timers(), n)
	}
}

// advance moves time forward in steps, letting every replica finish what
// each step made due before taking the next.
func (c *cluster) advance(d, step time.Duration) {
	c.t.Helper()
	for d > 0 {
		s := min(step, d)
		c.db.Advance(s)
		d -= s
		c.settle()
	}
}

// settle waits until every replica is idle: nothing firing, no handler
// running, and each loop asleep on its timer. It polls real time, bounded:
// the work it waits for is in-memory and database round trips, never a
// timer.
func (c *cluster) settle() { c.t.Helper(); c.settleHolding(0) }

// settleHolding is settle while held handlers are deliberately blocked: each
// counts as busy and keeps one renewal timer.
func (c *cluster) settleHolding(held int) {
	c.t.Helper()
	idle := func() bool {
		var busy int64
		for _, s := range c.replicas {
			busy += s.e.Busy.Load()
		}
		return busy == int64(held) && c.db.Timers() == len(c.replicas)+held
	}
	within := c.settleWithin
	if within == 0 {
		within = 30 * time.Second
	}
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		// Check twice: a loop between wake-up and its busy mark looks idle once.
		if idle() {
			time.Sleep(time.Millisecond)
			if idle() {
				return
			}
		}
		time.Sleep(200 * time.Microsecond)
	}
	c.t.Fatalf("replicas did not settle: %d timers for %d replicas and %d held runs", c.db.Timers(), len(c.replicas), held)
}

// ledger records what handlers did.
type ledger struct {
	mu    sync.Mutex
	runs  map[string]map[time.Time][]string // job → slot → replicas that ran it
	early []string
}

func newLedger() *ledger { return &ledger{runs: map[string]map[time.Time][]string{}} }

// handler records each run; db is the database clock, to catch early runs.
func (l *ledger) handler(db clock.Clock) Handler {
	return func(ctx context.Context, run *Run) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.runs[run.Job] == nil {
			l.runs[run.Job] = map[time.Time][]string{}
		}
		l.runs[run.Job][run.Slot] = append(l.runs[run.Job][run.Slot], run.Owner)
		if !run.Slot.IsZero() && db.Now().Before(run.Slot) {
			l.early = append(l.early, run.Job+" "+run.Slot.String())
		}
		return nil
	}
}

// wantEachOnce checks that job ran every slot in [from, to) with step
// once, and nothing else.
func (l *ledger) wantEachOnce(t *testing.T, job string, from, to time.Time, step time.Duration) {
	t.Helper()
	l.wantNoneTwiceOrEarly(t)
	l.mu.Lock()
	defer l.mu.Unlock()
	for slot := from; slot.Before(to); slot = slot.Add(step) {
		if got := l.runs[job][slot]; len(got) != 1 {
			t.Fatalf("job %s slot %s ran %d times (by %v), want once", job, slot.Format(time.TimeOnly), len(got), got)
		}
	}
	for slot, by := range l.runs[job] {
		if slot.Before(from) || !slot.Before(to) {
			t.Fatalf("job %s ran slot %s (by %v), outside [%s, %s)", job, slot, by, from, to)
		}
	}
}

// wantNoneTwiceOrEarly checks that no slot of any job ran twice and none
// before it was due by the database clock.
func (l *ledger) wantNoneTwiceOrEarly(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.early) > 0 {
		t.Fatalf("slots run before they were due by the database clock: %v", l.early)
	}
	for job, slots := range l.runs {
		for slot, by := range slots {
			if len(by) > 1 && !slot.IsZero() {
				t.Fatalf("job %s slot %s ran %d times (by %v)", job, slot, len(by), by)
			}
		}
	}
}

// ran reports how many times job ran slot.
func (l *ledger) ran(job string, slot time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.runs[job][slot])
}

// dumpRuns logs a job's latest run rows, to explain a failure.
func dumpRuns(t *testing.T, s store.Store, job string) {
	runs, _ := s.RunList(context.Background(), store.RunListParams{Job: job, Limit: 20})
	for _, r := range runs {
		t.Logf("run %d slot %s owner %s gen %d skipped %v reason %q err %q logs %q", r.ID, r.Slot.Format("15:04:05"), r.Owner, r.Generation, r.Skipped, r.Reason, r.Error, r.Logs)
	}
}

// minuteJobs is n jobs, job-0 to job-(n-1), every minute, each run by h.
func minuteJobs(n int, h Handler) []Job {
	jobs := make([]Job, n)
	for i := range jobs {
		jobs[i] = Job{Name: fmt.Sprintf("job-%d", i), Schedule: "* * * * *", Handler: h}
	}
	return jobs
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

// gate holds a store call, once entered, until the test releases it: a
// call that takes long on a real database (thousands of rows).
type gate struct {
	entered chan struct{} // closed by the first call
	release chan struct{} // closed by the test
	once    sync.Once
}

func newGate() *gate { return &gate{entered: make(chan struct{}), release: make(chan struct{})} }

func (g *gate) pass() {
	g.once.Do(func() { close(g.entered) })
	<-g.release
}

// passUnlessDone is pass for a call that ends with its context: it returns
// the context's error if that ends first.
func (g *gate) passUnlessDone(ctx context.Context) error {
	g.once.Do(func() { close(g.entered) })
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
