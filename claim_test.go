package cronfence

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/wait"
	"github.com/cronfence/cronfence/store"
)

// Thousands of slots due at one instant are claimed in statements of at
// most maxClaimBatch items, so no claim statement takes seconds; every
// slot still runs once.
func TestALargeBatchIsClaimedInBoundedStatements(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		l := newLedger()
		st := intercept(c.open(t))
		n := maxClaimBatch + 10
		jobs := minuteJobs(n, l.handler(c.db))
		c.startWith(Config{Owner: "a", Store: st, Clock: offsetClock{c.db, 0}, Retention: -1}, jobs...)
		slot := c.db.Now().Truncate(time.Minute).Add(time.Minute)
		st.reset() // catch-up and the like at start
		c.advance(time.Minute, time.Minute)
		for i := range n {
			if got := l.ran(fmt.Sprintf("job-%d", i), slot); got != 1 {
				t.Fatalf("job-%d ran %d times, want once", i, got)
			}
		}
		claims := st.batches("SlotClaimBatch")
		sum := 0
		for _, size := range claims {
			if size > maxClaimBatch {
				t.Fatalf("a claim statement of %d items (batches %v), want at most %d", size, claims, maxClaimBatch)
			}
			sum += size
		}
		if sum != n {
			t.Fatalf("claims of %v items, %d in all; want the %d slots once each", claims, sum, n)
		}
		c.wantNeverDown()
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
		st := intercept(c.open(t))
		c.startWith(Config{Owner: "a", Store: st, Clock: offsetClock{c.db, 0}, Retention: -1}, jobs...)
		// The n held runs share the replica's one renewal timer.
		holding := func() { c.settleHeld(n, 1) }
		first := c.db.Now().Truncate(time.Minute).Add(time.Minute)
		c.db.Advance(time.Minute) // every job's slot starts, and waits at the gate
		holding()
		c.db.Advance(time.Minute) // every job's next slot is buffered behind it
		holding()
		st.reset()
		close(gate) // the runs end together
		c.settle()
		for i := range n {
			job := fmt.Sprintf("job-%d", i)
			if a, b := l.ran(job, first), l.ran(job, first.Add(time.Minute)); a != 1 || b != 1 {
				t.Fatalf("%s ran its first slot %d times and the buffered one %d times, want once each", job, a, b)
			}
		}
		claims := st.batches("SlotClaimBatch")
		sum := 0
		for _, size := range claims {
			sum += size
		}
		if sum != n || len(claims) > n/4 {
			t.Fatalf("the %d buffered slots were claimed in %d statements (sizes %v), want a few", n, len(claims), claims)
		}
		c.wantNeverDown()
	})
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
		l := newLedger()
		// By slot, the jobs of each claim statement in the order sent.
		var mu sync.Mutex
		sent := map[time.Time][][]string{}
		co := intercept(c.open(t))
		co.before = func(call *call) {
			if call.method != "SlotClaimBatch" {
				return
			}
			by := map[time.Time][]string{}
			for _, it := range *call.arg.(*[]store.SlotClaimParams) {
				by[it.Slot] = append(by[it.Slot], it.Job)
			}
			mu.Lock()
			defer mu.Unlock()
			for slot, jobs := range by {
				sent[slot] = append(sent[slot], jobs)
			}
		}
		n := maxClaimBatch + 200
		jobs := minuteJobs(n, l.handler(c.db))
		c.startWith(Config{Owner: "a", Store: co, Clock: offsetClock{c.db, 0}, Retention: -1}, jobs...)
		first := c.db.Now().Truncate(time.Minute).Add(time.Minute)
		c.advance(2*time.Minute, time.Minute)
		mu.Lock()
		defer mu.Unlock()
		for _, slot := range []time.Time{first, first.Add(time.Minute)} {
			var order []string
			for _, jobs := range sent[slot] {
				order = append(order, jobs...)
			}
			if len(order) != n || len(sent[slot]) < 2 {
				t.Fatalf("slot %s: %d claims in %d statements, want the %d jobs once each, in more than one", slot, len(order), len(sent[slot]), n)
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

// clockAhead is a store whose clock reads run ahead of the database clock
// by by: to the replica measuring its offset, the same as its own clock
// drifting behind the database's after the measurement. It fires every
// slot that much early by the database clock.
func clockAhead(st store.Store, by time.Duration) *intercepted {
	ahead := intercept(st)
	ahead.after = func(c *call) {
		if c.method == "Now" {
			now := c.result.(*time.Time)
			*now = now.Add(by)
		}
	}
	return ahead
}

// dbClockBound bounds a store's clock from above at this process's
// instants: read between two readings of the monotonic clock (before it),
// the database clock reads at most read + (at − before) at a later at.
type dbClockBound struct{ before, read time.Time }

func boundDBClock(t *testing.T, st store.Store) dbClockBound {
	t.Helper()
	before := time.Now()
	read, err := st.Now(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return dbClockBound{before: before, read: read}
}

// wantNotBefore fails the test when a handler that started at started (this
// process's clock) certainly started before slot by the database clock.
func (b dbClockBound) wantNotBefore(t *testing.T, slot, started time.Time) {
	t.Helper()
	if latest := b.read.Add(started.Sub(b.before)); latest.Before(slot) {
		t.Errorf("the handler of slot %s started at %s at the latest by the database clock: %s early",
			slot.Format(time.RFC3339Nano), latest.Format(time.RFC3339Nano), slot.Sub(latest))
	}
}

// TestClaimSentAheadIsJudgedAtTheSlot: on the real clock, a replica that
// fires a slot early by the database clock (its offset measured a little
// off, or its clock drifted since) still wins the slot with its first
// claim: the store waits for the slot, by its own clock, inside the claim,
// or commits the claim ahead and says how long the replica must still
// wait. It used to refuse the claim not_due and the replica to try again
// 20 ms later, so a slot started 20–40 ms late. Nothing starts before its
// slot by the database clock: neither the run's record nor its handler.
func TestClaimSentAheadIsJudgedAtTheSlot(t *testing.T) {
	for _, o := range storeOpeners {
		t.Run(o.name, func(t *testing.T) {
			t.Parallel()
			st := o.open(t, nil)(t) // the database's own clock, not a test's
			var claims, notDue, won atomic.Int64
			obs := ObserverFunc(func(e Event) {
				if ce, ok := e.(ClaimEvent); ok {
					claims.Add(1)
					if ce.Refusal == store.ClaimNotDue {
						notDue.Add(1)
					}
					if ce.Won {
						won.Add(1)
					}
				}
			})
			var mu sync.Mutex
			var slots, starts []time.Time
			bound := boundDBClock(t, st)
			s, err := New(Config{Store: clockAhead(st, 30*time.Millisecond), Owner: "a", Logger: quiet,
				Retention: -1, HeartbeatEvery: -1, Observer: obs})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Register(Job{Name: "tick", Schedule: "* * * * * *", Handler: func(_ context.Context, r *Run) error {
				started := time.Now()
				mu.Lock()
				slots, starts = append(slots, r.Slot), append(starts, started)
				mu.Unlock()
				return nil
			}}); err != nil {
				t.Fatal(err)
			}
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			const want = 3
			wait.For(t, 20*time.Second, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(slots) >= want
			}, func() string { return "the job did not run 3 slots" })
			if err := s.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			if n := notDue.Load(); n != 0 {
				t.Errorf("%d claims refused not_due over %d won: the store did not wait for the slot", n, won.Load())
			}
			// One claim a slot: a slot fired ahead is not fired again.
			if c, w := claims.Load(), won.Load(); c != w {
				t.Errorf("%d claims sent for %d slots won", c, w)
			}
			mu.Lock()
			defer mu.Unlock()
			for i, slot := range slots {
				bound.wantNotBefore(t, slot, starts[i])
				sl, err := st.SlotGet(context.Background(), "tick", slot)
				if err != nil {
					t.Fatal(err)
				}
				if sl.StartedAt.Before(slot) {
					t.Errorf("slot %s started at %s by the database clock: early", slot.Format(time.RFC3339Nano), sl.StartedAt.Format(time.RFC3339Nano))
				}
			}
		})
	}
}

// A replica whose runs' ends wait to be recorded behind the batch in
// flight (a backlog: under load) records them before it claims its next
// slots. Each end releases a job's lease; claimed first, the job's next
// slot found the lease held, was recorded buffered, and was claimed again
// once the end was in: under overload, two claims for a run, and claims
// that slowed the ends further.
func TestARunsEndsAreRecordedBeforeTheNextClaims(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		// The runs' ends are held back until release, as a loaded
		// database holds them; each end answered and each claim sent is
		// logged, in order.
		held := newGate()
		var mu sync.Mutex
		var seen []string // "end <job>" once answered, "claim <job> <slot>" as sent
		log := func(e string) { mu.Lock(); seen = append(seen, e); mu.Unlock() }
		logged := func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(seen) }
		st := intercept(c.open(t))
		st.before = func(call *call) {
			switch call.method {
			case "SlotFinish", "SlotFinishBatch":
				call.err = held.passUnlessDone(call.ctx)
			case "SlotClaimBatch":
				for _, p := range *call.arg.(*[]store.SlotClaimParams) {
					log("claim " + p.Job + " " + p.Slot.Format(time.TimeOnly))
				}
			}
		}
		st.after = func(call *call) {
			switch {
			case !call.asked:
			case call.method == "SlotFinish":
				log("end " + call.arg.(*store.SlotFinishParams).Job)
			case call.method == "SlotFinishBatch":
				for _, p := range *call.arg.(*[]store.SlotFinishParams) {
					log("end " + p.Job)
				}
			}
		}
		release := sync.OnceFunc(func() { close(held.release) })
		l := newLedger()
		// The ends of one and two go, and are held (in one batch or two);
		// three's run ends only then, so its end waits behind them.
		afterHeld := func(ctx context.Context, run *Run) error {
			select {
			case <-held.entered:
			case <-ctx.Done():
			}
			return l.handler(c.db)(ctx, run)
		}
		s := c.startHolding(-1, Config{Owner: "a", Store: st, Clock: offsetClock{c.db, 0}, Retention: -1},
			Job{Name: "one", Schedule: "*/10 * * * * *", Handler: l.handler(c.db)},
			Job{Name: "two", Schedule: "*/10 * * * * *", Handler: l.handler(c.db)},
			Job{Name: "three", Schedule: "*/10 * * * * *", Handler: afterHeld})
		t.Cleanup(release) // after startHolding's: cleanups run last first, so before the replica's Stop
		first := c.db.Now().Truncate(10 * time.Second).Add(10 * time.Second)
		c.db.Advance(first.Sub(c.db.Now()))
		backlog := func() bool {
			return s.runner.finish.batch.Queued() > 0
		}
		wait.For(t, 10*time.Second, backlog, func() string { return "the runs' ends did not queue up" })

		// The next slots fall due while the ends are held.
		c.db.Advance(10 * time.Second)
		next := first.Add(10 * time.Second).Format(time.TimeOnly)
		isNextClaim := func(e string) bool { return strings.HasPrefix(e, "claim ") && strings.HasSuffix(e, " "+next) }
		claimedNext := func() bool { return slices.ContainsFunc(logged(), isNextClaim) }
		draining := func() bool {
			return s.runner.finish.batch.Draining()
		}
		wait.For(t, 10*time.Second, func() bool { return claimedNext() || draining() },
			func() string { return "the replica neither claimed its next slots nor waited for its ends" })
		if claimedNext() {
			t.Fatalf("the replica claimed its next slots while its runs' ends waited to be recorded: %v", logged())
		}
		release()
		wait.For(t, 10*time.Second, claimedNext, func() string { return "the next slots were not claimed once the ends were in" })
		events := logged()
		ends := 0
		for _, e := range events {
			if strings.HasPrefix(e, "end ") {
				ends++
				continue
			}
			if isNextClaim(e) && ends < 3 {
				t.Fatalf("a claim of the next slots went before the three ends were answered: %v", events)
			}
		}
		wait.For(t, 10*time.Second, func() bool {
			return l.ran("one", first.Add(10*time.Second)) == 1 && l.ran("two", first.Add(10*time.Second)) == 1 &&
				l.ran("three", first.Add(10*time.Second)) == 1
		}, func() string { return "the next slots did not run" })
	})
}

// One failed claim does not lose the slot: the replica tries once more at
// once, and only a second failure leaves the slot to catch-up.
func TestOneFailedClaimIsRetried(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		// The next n claims fail, as a pooled connection a database
		// restart killed fails the first statement sent on it.
		var failNext atomic.Int64
		open := c.open
		c.open = func(t *testing.T) store.Store {
			flaky := intercept(open(t))
			flaky.before = func(call *call) {
				if call.method == "SlotClaimBatch" && failNext.Add(-1) >= 0 {
					call.err = errCut
				}
			}
			return flaky
		}
		l := newLedger()
		job := Job{Name: "tick", Schedule: "* * * * * *", Handler: l.handler(c.db)}
		start := c.db.Now()
		c.start("replica", 0, job)
		c.advance(3*time.Second, time.Second)
		failNext.Store(1)
		c.advance(3*time.Second, time.Second)
		l.wantEachOnce(t, "tick", start.Add(time.Second), start.Add(7*time.Second), time.Second)
		c.wantNeverDown()
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
