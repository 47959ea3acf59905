package cronfence

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
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
	// 2 minutes. A safety net against a hang, not a measurement: on a
	// machine shared with the race detector and other packages' tests a
	// step of hundreds of runs on SQLite has taken over 30 s.
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
			// A replica waits for another's write lock up to BusyTimeout,
			// in real time: a minute, as StoreTimeout (startHolding).
			s, err := sqlite.Open(context.Background(), path, &sqlite.Config{NowFunc: now, BusyTimeout: time.Minute})
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

// eachStoreFrom is eachStore with the cluster's clock starting at start.
//
// The test runs in parallel with the package's others (t.Parallel): each
// store's database is the test's own, and its time the cluster's.
func eachStoreFrom(t *testing.T, start time.Time, test func(t *testing.T, c *cluster)) {
	t.Parallel()
	for _, o := range storeOpeners {
		t.Run(o.name, func(t *testing.T) {
			t.Parallel()
			start := start
			if start.IsZero() {
				start = time.Now().UTC().Truncate(time.Minute)
			}
			db := clock.NewFake(start)
			c := &cluster{t: t, db: db, kind: o.name}
			c.open = o.open(t, db.Now)
			test(t, c)
		})
	}
}

// eachStoreNow is eachStore with the cluster's clock starting at the whole
// minute the test runs in (read once it runs, after the other tests it
// waited for in parallel): near the real time for a test whose SQL reads
// the database's own clock (complete() and fence() do), which the pinned
// clock does not move.
func eachStoreNow(t *testing.T, test func(t *testing.T, c *cluster)) {
	eachStoreFrom(t, time.Time{}, test)
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
	if cfg.StoreTimeout == 0 {
		// Store round trips take real time, on a machine the test shares
		// with the race detector and other packages' tests: a batch of
		// hundreds of claims on SQLite can pass the 10 s default there,
		// and the store would count as down in a test of something else.
		// Tests of the timeout set their own.
		cfg.StoreTimeout = time.Minute
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
func (c *cluster) settleHolding(held int) { c.t.Helper(); c.settleHeld(held, held) }

// settleHeld is the one wait for the replicas to be idle: nothing firing,
// no handler running but the busy ones the test holds, and each loop
// asleep on its timer beside the held runs' timers (a renewal each, and
// one more while a job's timeout is pending). It polls real time, bounded
// by settleWithin: the work it waits for is in-memory and database round
// trips, never a timer.
func (c *cluster) settleHeld(busy, timers int) {
	c.t.Helper()
	idle := func() bool {
		var n int64
		for _, s := range c.replicas {
			n += s.e.Busy.Load()
		}
		return n == int64(busy) && c.db.Timers() == len(c.replicas)+timers
	}
	within := c.settleWithin
	if within == 0 {
		within = 2 * time.Minute
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
	c.t.Fatalf("replicas did not settle: %d timers for %d replicas, %d held runs with %d timers", c.db.Timers(), len(c.replicas), busy, timers)
}

// ledger records what handlers did.
type ledger struct {
	mu    sync.Mutex
	runs  map[string]map[time.Time][]string // job → slot → replicas that ran it
	order map[string][]time.Time            // job → its slots in the order their runs started
	early []string
}

func newLedger() *ledger {
	return &ledger{runs: map[string]map[time.Time][]string{}, order: map[string][]time.Time{}}
}

// handler records each run; db is the database clock, to catch early runs.
func (l *ledger) handler(db clock.Clock) Handler {
	return func(ctx context.Context, run *Run) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.runs[run.Job] == nil {
			l.runs[run.Job] = map[time.Time][]string{}
		}
		l.runs[run.Job][run.Slot] = append(l.runs[run.Job][run.Slot], run.Owner)
		l.order[run.Job] = append(l.order[run.Job], run.Slot)
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

// started returns job's slots in the order their runs started.
func (l *ledger) started(job string) []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.order[job])
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

// errCut is the error of a store the test cut off.
var errCut = errors.New("connection refused (test outage)")

// call is one call to an intercepted store, as its hooks see it.
type call struct {
	method string // the store method: "SlotFinish", "Prune", …
	ctx    context.Context
	// arg points at the call's argument (*store.SlotFinishParams,
	// *[]store.SlotClaimParams, *string, …; nil for Now and
	// SlotListInterrupted): a before hook may change what the store gets.
	arg any
	// result points at the call's answer (*store.PruneResult, *time.Time,
	// …; *struct{} for ReplicaRemove), for the after hook to read or change.
	result any
	// err is the call's error: set by a before hook, the call answers it
	// (with a zero result) without asking the store; an after hook may
	// change the store's.
	err error
	// skip, set by a before hook, answers err (nil: success) and a zero
	// result without asking the store.
	skip bool
	// asked tells the after hook that the store was asked.
	asked bool
}

// intercepted is the tests' one store wrapper: around each call of the
// methods below it counts the call and runs the test's hooks, before (it
// may change the argument, hold the call, or answer in the store's stead)
// and after (it may record or change the answer; it runs whether or not
// the store was asked). Either hook may be nil; set them before the store is used.
// Calls of the other methods go straight to the store.
//
// Like any type embedding store.Store, it hides the store's optional
// interfaces (store.Liveness, store.Notices), so a replica on it has no
// liveness lock and hears no notices. intercept(nil) is a store whose
// every call panics: for a test that must not reach the store.
type intercepted struct {
	store.Store
	before, after func(c *call)

	mu    sync.Mutex
	calls map[string]int
	sizes map[string][]int
}

func intercept(st store.Store) *intercepted {
	return &intercepted{Store: st, calls: map[string]int{}, sizes: map[string][]int{}}
}

// count returns how many calls of method were made since the last reset.
func (s *intercepted) count(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// batches returns the number of items in each call of a batch method
// (SlotClaimBatch, SlotFinishBatch, SlotSkip) since the last reset, as
// the store was called.
func (s *intercepted) batches(method string) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sizes[method])
}

// reset forgets the calls counted so far.
func (s *intercepted) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.calls)
	clear(s.sizes)
}

// through makes one intercepted call: do asks the store with what the
// before hook left in c.
func through[R any](s *intercepted, c *call, do func(ctx context.Context) (R, error)) (R, error) {
	s.mu.Lock()
	s.calls[c.method]++
	s.mu.Unlock()
	var r R
	if s.before != nil {
		s.before(c)
	}
	if n, ok := batchSize(c.arg); ok {
		s.mu.Lock()
		s.sizes[c.method] = append(s.sizes[c.method], n)
		s.mu.Unlock()
	}
	if c.err == nil && !c.skip {
		r, c.err = do(c.ctx)
		c.asked = true
	}
	c.result = &r
	if s.after != nil {
		s.after(c)
	}
	return r, c.err
}

// batchSize returns the number of items of a batch call's argument.
func batchSize(arg any) (int, bool) {
	switch a := arg.(type) {
	case *[]store.SlotClaimParams:
		return len(*a), true
	case *[]store.SlotFinishParams:
		return len(*a), true
	case *[]store.SlotSkipParams:
		return len(*a), true
	}
	return 0, false
}

func (s *intercepted) Now(ctx context.Context) (time.Time, error) {
	return through(s, &call{method: "Now", ctx: ctx}, s.Store.Now)
}

func (s *intercepted) LeaseRenew(ctx context.Context, p store.LeaseRenewParams) (store.Lease, error) {
	return through(s, &call{method: "LeaseRenew", ctx: ctx, arg: &p},
		func(ctx context.Context) (store.Lease, error) { return s.Store.LeaseRenew(ctx, p) })
}

func (s *intercepted) SlotClaim(ctx context.Context, p store.SlotClaimParams) (store.SlotClaimResult, error) {
	return through(s, &call{method: "SlotClaim", ctx: ctx, arg: &p},
		func(ctx context.Context) (store.SlotClaimResult, error) { return s.Store.SlotClaim(ctx, p) })
}

func (s *intercepted) SlotClaimBatch(ctx context.Context, items []store.SlotClaimParams) ([]store.SlotClaimResult, error) {
	return through(s, &call{method: "SlotClaimBatch", ctx: ctx, arg: &items},
		func(ctx context.Context) ([]store.SlotClaimResult, error) { return s.Store.SlotClaimBatch(ctx, items) })
}

func (s *intercepted) SlotFinish(ctx context.Context, p store.SlotFinishParams) (store.SlotFinishResult, error) {
	return through(s, &call{method: "SlotFinish", ctx: ctx, arg: &p},
		func(ctx context.Context) (store.SlotFinishResult, error) { return s.Store.SlotFinish(ctx, p) })
}

func (s *intercepted) SlotFinishBatch(ctx context.Context, items []store.SlotFinishParams) ([]store.SlotFinishResult, error) {
	return through(s, &call{method: "SlotFinishBatch", ctx: ctx, arg: &items},
		func(ctx context.Context) ([]store.SlotFinishResult, error) {
			return s.Store.SlotFinishBatch(ctx, items)
		})
}

func (s *intercepted) SlotSkip(ctx context.Context, items []store.SlotSkipParams) ([]store.Run, error) {
	return through(s, &call{method: "SlotSkip", ctx: ctx, arg: &items},
		func(ctx context.Context) ([]store.Run, error) { return s.Store.SlotSkip(ctx, items) })
}

func (s *intercepted) SlotListInterrupted(ctx context.Context) ([]store.Slot, error) {
	return through(s, &call{method: "SlotListInterrupted", ctx: ctx}, s.Store.SlotListInterrupted)
}

func (s *intercepted) LeaseAcquire(ctx context.Context, p store.LeaseAcquireParams) (store.Lease, bool, error) {
	type acquired struct {
		lease store.Lease
		ok    bool
	}
	r, err := through(s, &call{method: "LeaseAcquire", ctx: ctx, arg: &p}, func(ctx context.Context) (acquired, error) {
		l, ok, err := s.Store.LeaseAcquire(ctx, p)
		return acquired{l, ok}, err
	})
	return r.lease, r.ok, err
}

func (s *intercepted) LeaseRelease(ctx context.Context, ref store.LeaseRef) (bool, error) {
	return through(s, &call{method: "LeaseRelease", ctx: ctx, arg: &ref},
		func(ctx context.Context) (bool, error) { return s.Store.LeaseRelease(ctx, ref) })
}

func (s *intercepted) JobStateList(ctx context.Context) ([]store.JobState, error) {
	return through(s, &call{method: "JobStateList", ctx: ctx}, s.Store.JobStateList)
}

func (s *intercepted) BackfillList(ctx context.Context, p store.BackfillListParams) ([]store.Backfill, error) {
	return through(s, &call{method: "BackfillList", ctx: ctx, arg: &p},
		func(ctx context.Context) ([]store.Backfill, error) { return s.Store.BackfillList(ctx, p) })
}

func (s *intercepted) BackfillProgress(ctx context.Context, p store.BackfillProgressParams) (store.Backfill, bool, error) {
	type progress struct {
		b       store.Backfill
		written bool
	}
	r, err := through(s, &call{method: "BackfillProgress", ctx: ctx, arg: &p}, func(ctx context.Context) (progress, error) {
		b, written, err := s.Store.BackfillProgress(ctx, p)
		return progress{b, written}, err
	})
	return r.b, r.written, err
}

func (s *intercepted) SlotList(ctx context.Context, p store.SlotListParams) ([]store.Slot, error) {
	return through(s, &call{method: "SlotList", ctx: ctx, arg: &p},
		func(ctx context.Context) ([]store.Slot, error) { return s.Store.SlotList(ctx, p) })
}

func (s *intercepted) Prune(ctx context.Context, p store.PruneParams) (store.PruneResult, error) {
	return through(s, &call{method: "Prune", ctx: ctx, arg: &p},
		func(ctx context.Context) (store.PruneResult, error) { return s.Store.Prune(ctx, p) })
}

func (s *intercepted) ReplicaHeartbeat(ctx context.Context, r store.Replica) (store.Replica, error) {
	return through(s, &call{method: "ReplicaHeartbeat", ctx: ctx, arg: &r},
		func(ctx context.Context) (store.Replica, error) { return s.Store.ReplicaHeartbeat(ctx, r) })
}

func (s *intercepted) ReplicaRemove(ctx context.Context, owner string) error {
	_, err := through(s, &call{method: "ReplicaRemove", ctx: ctx, arg: &owner},
		func(ctx context.Context) (struct{}, error) { return struct{}{}, s.Store.ReplicaRemove(ctx, owner) })
	return err
}

func (s *intercepted) MonitorSnapshot(ctx context.Context, p store.MonitorSnapshotParams) (store.MonitorSnapshot, error) {
	return through(s, &call{method: "MonitorSnapshot", ctx: ctx, arg: &p},
		func(ctx context.Context) (store.MonitorSnapshot, error) { return s.Store.MonitorSnapshot(ctx, p) })
}

func TestMain(m *testing.M) { pgtest.Main(m) }
