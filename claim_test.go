package cronfence

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/finishbatch"
	"github.com/cronfence/cronfence/internal/wait"
	"github.com/cronfence/cronfence/store"
)

// finishCounter is a store that counts the round trips that record runs'
// ends.
type finishCounter struct {
	store.Store
	singles, batches, items atomic.Int64

	mu     sync.Mutex
	claims []int // the size of each claim batch
}

func (f *finishCounter) SlotFinish(ctx context.Context, p store.SlotFinishParams) (store.SlotFinishResult, error) {
	f.singles.Add(1)
	return f.Store.SlotFinish(ctx, p)
}

func (f *finishCounter) SlotFinishBatch(ctx context.Context, items []store.SlotFinishParams) ([]store.SlotFinishResult, error) {
	f.batches.Add(1)
	f.items.Add(int64(len(items)))
	return f.Store.SlotFinishBatch(ctx, items)
}

// minuteJobs is n jobs, job-0 to job-(n-1), every minute, each run by h.
func minuteJobs(n int, h Handler) []Job {
	jobs := make([]Job, n)
	for i := range jobs {
		jobs[i] = Job{Name: fmt.Sprintf("job-%d", i), Schedule: "* * * * *", Handler: h}
	}
	return jobs
}

// Runs that end together are recorded together: the ends that come in
// while one is being recorded go in the next round trip, so 300 runs
// ending at once cost a few, not 300. Each run's slot is still completed,
// once.
func TestRunsEndingTogetherAreRecordedInFewRoundTrips(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		l := newLedger()
		fc := &finishCounter{Store: c.open(t)}
		const n = 300
		jobs := minuteJobs(n, l.handler(c.db))
		c.startWith(Config{Owner: "a", Store: fc, Clock: offsetClock{c.db, 0}, Retention: -1}, jobs...)
		slot := c.db.Now().Truncate(time.Minute).Add(time.Minute)
		c.advance(time.Minute, time.Minute)
		st := c.open(t)
		for i := range n {
			job := fmt.Sprintf("job-%d", i)
			if got := l.ran(job, slot); got != 1 {
				t.Fatalf("%s ran %d times, want once", job, got)
			}
			if sl, err := st.SlotGet(context.Background(), job, slot); err != nil || sl.Status != store.SlotCompleted {
				t.Fatalf("%s's slot: %+v, %v; want completed", job, sl, err)
			}
		}
		trips := fc.singles.Load() + fc.batches.Load()
		if trips > n/4 {
			t.Fatalf("%d round trips (%d alone, %d batches of %d ends) recorded %d ends, want a few", trips, fc.singles.Load(), fc.batches.Load(), fc.items.Load(), n)
		}
		c.wantNeverDown()
	})
}

func (f *finishCounter) SlotClaimBatch(ctx context.Context, items []store.SlotClaimParams) ([]store.SlotClaimResult, error) {
	f.mu.Lock()
	f.claims = append(f.claims, len(items))
	f.mu.Unlock()
	return f.Store.SlotClaimBatch(ctx, items)
}

// Thousands of slots due at one instant are claimed in statements of at
// most maxClaimBatch items, so no claim statement takes seconds; every
// slot still runs once.
func TestALargeBatchIsClaimedInBoundedStatements(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		c.settleWithin = 2 * time.Minute
		l := newLedger()
		fc := &finishCounter{Store: c.open(t)}
		n := maxClaimBatch + 10
		jobs := minuteJobs(n, l.handler(c.db))
		// StoreTimeout: a 1,000-item claim on SQLite under -race on a
		// loaded host takes seconds; this test is about the statements'
		// size, not the bound on their time.
		c.startWith(Config{Owner: "a", Store: fc, Clock: offsetClock{c.db, 0}, Retention: -1, StoreTimeout: time.Minute}, jobs...)
		slot := c.db.Now().Truncate(time.Minute).Add(time.Minute)
		fc.mu.Lock()
		fc.claims = nil // catch-up and the like at start
		fc.mu.Unlock()
		c.advance(time.Minute, time.Minute)
		for i := range n {
			if got := l.ran(fmt.Sprintf("job-%d", i), slot); got != 1 {
				t.Fatalf("job-%d ran %d times, want once", i, got)
			}
		}
		fc.mu.Lock()
		defer fc.mu.Unlock()
		sum := 0
		for _, size := range fc.claims {
			if size > maxClaimBatch {
				t.Fatalf("a claim statement of %d items (batches %v), want at most %d", size, fc.claims, maxClaimBatch)
			}
			sum += size
		}
		if sum != n {
			t.Fatalf("claims of %v items, %d in all; want the %d slots once each", fc.claims, sum, n)
		}
		c.wantNeverDown()
	})
}

// gatedFinishes is a store whose finishes wait for the test's word, to
// hold a batch in flight.
type gatedFinishes struct {
	store.Store
	entered chan int      // the size of each finish call, as it starts
	release chan struct{} // one receive lets one call go on
}

func (g *gatedFinishes) SlotFinish(ctx context.Context, p store.SlotFinishParams) (store.SlotFinishResult, error) {
	g.entered <- 1
	<-g.release
	return g.Store.SlotFinish(ctx, p)
}

func (g *gatedFinishes) SlotFinishBatch(ctx context.Context, items []store.SlotFinishParams) ([]store.SlotFinishResult, error) {
	g.entered <- len(items)
	<-g.release
	return g.Store.SlotFinishBatch(ctx, items)
}

// Under load that never lets up, no run's end waits for more than its own
// batch and the one in flight before it: the run whose end went first is
// answered while the ends queued behind it are still being sent.
func TestAGroupCommitAnswersEachEndWithItsOwnBatch(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		st := c.open(t)
		g := &gatedFinishes{Store: st, entered: make(chan int, 10), release: make(chan struct{})}
		b := &finishbatch.Batcher{Store: g}
		now, err := st.Now(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		finish := func(job string) <-chan error {
			r, err := st.SlotClaim(context.Background(), store.SlotClaimParams{Job: job, Slot: now.Add(-time.Second), LeaseName: "job:" + job,
				Owner: "a", TTL: time.Minute, MaxAttempts: 1})
			if err != nil || !r.Claimed {
				t.Fatalf("claim %s: %+v, %v", job, r, err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := b.Finish(store.SlotFinishParams{Job: job, Slot: r.Slot.Slot, LeaseName: r.Lease.Name, Owner: "a",
					Generation: r.Lease.Generation, Status: store.SlotCompleted, Run: store.Run{Attempt: 1, Success: true}}, 10*time.Second)
				done <- err
			}()
			return done
		}
		first := finish("first")
		if n := <-g.entered; n != 1 {
			t.Fatalf("the first end went in a batch of %d", n)
		}
		second, third := finish("second"), finish("third") // queued behind the first
		wait.For(t, 10*time.Second, func() bool {
			return b.Queued() == 2
		}, func() string { return "the later ends did not queue" })
		g.release <- struct{}{} // the first batch lands
		if n := <-g.entered; n != 2 {
			t.Fatalf("the queued ends went in a batch of %d, want 2", n)
		}
		// The second batch is in flight, held: the first end is answered.
		select {
		case err := <-first:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the first end waited for the batch after its own")
		}
		g.release <- struct{}{}
		for _, done := range []<-chan error{second, third} {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	})
}

// Runs that end together hand their buffered slots over together: the
// slots that waited for them are claimed in a few statements, not one
// each. (A replica under load, whose runs end late, has the next slot of
// most of its jobs buffered: at 10,000 jobs a second, 19,000 claims of one
// slot a minute took 46 s of the database's time.) Each buffered slot
// still runs once, after the run it waited for.
func TestBufferedSlotsHandedOverTogetherAreClaimedTogether(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		const n = 200
		gate := make(chan struct{})
		l := newLedger()
		record := l.handler(c.db)
		var jobs []Job
		for i := range n {
			jobs = append(jobs, Job{Name: fmt.Sprintf("job-%d", i), Schedule: "* * * * *", Overlap: OverlapBufferOne,
				Handler: func(ctx context.Context, r *Run) error {
					select {
					case <-gate:
					case <-ctx.Done():
						return ctx.Err()
					}
					return record(ctx, r)
				}})
		}
		fc := &finishCounter{Store: c.open(t)}
		s := c.startWith(Config{Owner: "a", Store: fc, Clock: offsetClock{c.db, 0}, Retention: -1}, jobs...)
		// The n held runs share the replica's one renewal timer.
		holding := func() {
			wait.For(t, time.Minute, func() bool { return s.e.Busy.Load() == n && c.db.Timers() == 2 }, func() string {
				return fmt.Sprintf("the replica did not settle with its %d runs held: %d busy, %d timers", n, s.e.Busy.Load(), c.db.Timers())
			})
		}
		first := c.db.Now().Truncate(time.Minute).Add(time.Minute)
		c.db.Advance(time.Minute) // every job's slot starts, and waits at the gate
		holding()
		c.db.Advance(time.Minute) // every job's next slot is buffered behind it
		holding()
		fc.mu.Lock()
		fc.claims = nil
		fc.mu.Unlock()
		close(gate) // the runs end together
		c.settle()
		for i := range n {
			job := fmt.Sprintf("job-%d", i)
			if a, b := l.ran(job, first), l.ran(job, first.Add(time.Minute)); a != 1 || b != 1 {
				t.Fatalf("%s ran its first slot %d times and the buffered one %d times, want once each", job, a, b)
			}
		}
		fc.mu.Lock()
		defer fc.mu.Unlock()
		sum := 0
		for _, size := range fc.claims {
			sum += size
		}
		if sum != n || len(fc.claims) > n/4 {
			t.Fatalf("the %d buffered slots were claimed in %d statements (sizes %v), want a few", n, len(fc.claims), fc.claims)
		}
		c.wantNeverDown()
	})
}

// claimOrder is a store that keeps, by slot, the jobs of each claim
// statement in the order they were sent.
type claimOrder struct {
	store.Store
	mu   sync.Mutex
	sent map[time.Time][][]string // slot → each statement's jobs of that slot
}

func (o *claimOrder) SlotClaimBatch(ctx context.Context, items []store.SlotClaimParams) ([]store.SlotClaimResult, error) {
	o.mu.Lock()
	by := map[time.Time][]string{}
	for _, it := range items {
		by[it.Slot] = append(by[it.Slot], it.Job)
	}
	for slot, jobs := range by {
		o.sent[slot] = append(o.sent[slot], jobs)
	}
	o.mu.Unlock()
	return o.Store.SlotClaimBatch(ctx, items)
}

// A large batch claims its jobs in the same order at every slot: a job
// claimed in the last of a batch's statements at one slot is claimed in
// the last at its next, wherever its preferred replica is, so its run has
// about its period to end before the next slot's claim judges whether it
// still runs. (In the timers' order, which is no order among entries due
// together, a job whose run started late at one slot was as likely
// claimed first at the next and found that run's end not yet recorded: an
// overlap, skipped. At 10,000 jobs a second on 3 replicas, 160–291 slots
// a minute.) The order is the scheduler's, the same whatever the store;
// PostgreSQL shows it.
func TestALargeBatchClaimsItsJobsInTheSameOrderAtEverySlot(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		if c.kind != "postgres" {
			t.Skip("the claims' order is the scheduler's, not the store's: shown on PostgreSQL")
		}
		c.settleWithin = 2 * time.Minute
		l := newLedger()
		co := &claimOrder{Store: c.open(t), sent: map[time.Time][][]string{}}
		n := maxClaimBatch + 200
		jobs := minuteJobs(n, l.handler(c.db))
		c.startWith(Config{Owner: "a", Store: co, Clock: offsetClock{c.db, 0}, Retention: -1, StoreTimeout: time.Minute}, jobs...)
		first := c.db.Now().Truncate(time.Minute).Add(time.Minute)
		c.advance(2*time.Minute, time.Minute)
		co.mu.Lock()
		defer co.mu.Unlock()
		for _, slot := range []time.Time{first, first.Add(time.Minute)} {
			var order []string
			for _, jobs := range co.sent[slot] {
				order = append(order, jobs...)
			}
			if len(order) != n || len(co.sent[slot]) < 2 {
				t.Fatalf("slot %s: %d claims in %d statements, want the %d jobs once each, in more than one", slot, len(order), len(co.sent[slot]), n)
			}
			if !slices.IsSorted(order) {
				i := 0
				for order[i] <= order[i+1] {
					i++
				}
				t.Fatalf("slot %s: %s was claimed before %s (claim %d of %d): the jobs were not claimed in their order", slot, order[i], order[i+1], i+1, n)
			}
			for _, job := range order {
				if got := l.ran(job, slot); got != 1 {
					t.Fatalf("%s ran slot %s %d times, want once", job, slot, got)
				}
			}
		}
		c.wantNeverDown()
	})
}
