package cronfence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
	"github.com/google/go-cmp/cmp"
)

// recorder is an Observer that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) Observe(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// take returns the events seen since the last take, in a stable order:
// events of one step come from several goroutines, so their order between
// jobs is not part of the contract.
func (r *recorder) take() []Event {
	r.mu.Lock()
	out := r.events
	r.events = nil
	r.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return eventKey(out[i]) < eventKey(out[j]) })
	return out
}

// eventKey orders events by job, then by the order a run goes through.
func eventKey(e Event) string {
	switch e := e.(type) {
	case ClockOffsetEvent:
		return "0"
	case ClaimEvent:
		return fmt.Sprintf("1 %s %s 1", e.Job, e.Slot.Format(time.RFC3339))
	case SkipEvent:
		return fmt.Sprintf("1 %s %s 2 %v", e.Job, e.Slot.Format(time.RFC3339), e.Origin)
	case RunStartEvent:
		return fmt.Sprintf("1 %s %s 3", e.Job, e.Slot.Format(time.RFC3339))
	case LeaseLostEvent:
		return fmt.Sprintf("1 %s 4", e.Job)
	case FenceRefusedEvent:
		return fmt.Sprintf("1 %s 5", e.Job)
	case RunEndEvent:
		return fmt.Sprintf("1 %s %s 6", e.Job, e.Slot.Format(time.RFC3339))
	}
	return fmt.Sprintf("9 %T", e)
}

func wantEvents(t *testing.T, step string, r *recorder, want ...Event) {
	t.Helper()
	sort.SliceStable(want, func(i, j int) bool { return eventKey(want[i]) < eventKey(want[j]) })
	if diff := cmp.Diff(want, r.take()); diff != "" {
		t.Fatalf("%s: events (-want +got):\n%s", step, diff)
	}
}

// TestObserver: the Observer sees each event of the pipeline as it
// happens, outside the scheduler's locks, and a panic in it stops nothing.
func TestObserver(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		test func(t *testing.T)
	}{
		{"SeesClaimsRunsSkipsAndClock", testObserverSeesClaimsRunsSkipsAndClock},
		{"SeesCatchUpAndLostClaims", testObserverSeesCatchUpAndLostClaims},
		{"SeesLeaseLostAndFenceRefused", testObserverSeesLeaseLostAndFenceRefused},
		{"PanicDoesNotStopRuns", testObserverPanicDoesNotStopRuns},
		{"CalledWithoutTheSchedulerLock", testObserverCalledWithoutTheSchedulerLock},
		{"SeesBufferedClaim", testObserverSeesBufferedClaim},
		{"SeesInterruptedAndResumed", testObserverSeesInterruptedAndResumed},
	} {
		t.Run(tc.name, tc.test)
	}
}

// A replica's claims, runs, skips (scheduled and manual) and clock
// measurements, exactly: on-time runs start with zero latency on the fake
// clock, a run held across a minute lasts that minute, a failing handler
// ends in failure, and an overlapped slot is one claim refused and one skip.
func testObserverSeesClaimsRunsSkipsAndClock(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		b := newBlocker()
		rec := &recorder{}
		jobs := []Job{
			{Name: "long", Schedule: "* * * * *", Handler: b.handler},
			{Name: "bad", Schedule: "* * * * *", MaxAttempts: 1, Handler: func(context.Context, *Run) error { return errors.New("boom") }},
		}
		a := c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: -1, Observer: rec}, jobs...)
		t0 := c.db.Now()
		wantEvents(t, "start", rec, ClockOffsetEvent{})

		c.db.Advance(time.Minute)
		first := <-b.started
		c.settleHolding(1)
		m1 := t0.Add(time.Minute)
		wantEvents(t, "12:01", rec,
			ClockOffsetEvent{},
			ClaimEvent{Job: "long", Owner: "a", Slot: m1, Won: true, Origin: OriginScheduled},
			RunStartEvent{Job: "long", Owner: "a", Slot: m1, Lease: "job:long", Generation: first.Generation, Attempt: 1, Origin: OriginScheduled},
			ClaimEvent{Job: "bad", Owner: "a", Slot: m1, Won: true, Origin: OriginScheduled},
			RunStartEvent{Job: "bad", Owner: "a", Slot: m1, Lease: "job:bad", Generation: 1, Attempt: 1, Origin: OriginScheduled},
			RunEndEvent{Job: "bad", Owner: "a", Slot: m1, Lease: "job:bad", Generation: 1, Attempt: 1, Outcome: RunFailed, Recorded: true, Origin: OriginScheduled},
		)

		c.db.Advance(time.Minute) // "long" still runs: 12:02 is skipped
		c.settleHolding(1)
		m2 := t0.Add(2 * time.Minute)
		wantEvents(t, "12:02", rec,
			ClockOffsetEvent{},
			ClaimEvent{Job: "long", Owner: "a", Slot: m2, Refusal: store.ClaimHeld, Recorded: store.SlotSkipped, Origin: OriginScheduled},
			SkipEvent{Job: "long", Owner: "a", Slot: m2, Reason: "already_executing", Holder: "a", Origin: OriginScheduled},
			ClaimEvent{Job: "bad", Owner: "a", Slot: m2, Won: true, Origin: OriginScheduled},
			RunStartEvent{Job: "bad", Owner: "a", Slot: m2, Lease: "job:bad", Generation: 2, Attempt: 1, Origin: OriginScheduled},
			RunEndEvent{Job: "bad", Owner: "a", Slot: m2, Lease: "job:bad", Generation: 2, Attempt: 1, Outcome: RunFailed, Recorded: true, Origin: OriginScheduled},
		)

		if _, err := a.Trigger(context.Background(), "long"); !errors.Is(err, ErrAlreadyExecuting) {
			t.Fatalf("Trigger during the run = %v, want ErrAlreadyExecuting", err)
		}
		wantEvents(t, "trigger", rec, SkipEvent{Job: "long", Owner: "a", Reason: "already_executing", Holder: "a", Origin: OriginManual})

		close(b.release)
		c.settle()
		wantEvents(t, "release", rec,
			RunEndEvent{Job: "long", Owner: "a", Slot: m1, Lease: "job:long", Generation: first.Generation, Attempt: 1, Outcome: RunSucceeded, Duration: time.Minute, Recorded: true, Origin: OriginScheduled})

		mr, err := a.Trigger(context.Background(), "long")
		if err != nil {
			t.Fatal(err)
		}
		<-b.started
		c.settle()
		wantEvents(t, "manual run", rec,
			RunStartEvent{Job: "long", Owner: "a", Lease: "job:long", Generation: mr.Generation, Attempt: 1, Origin: OriginManual},
			RunEndEvent{Job: "long", Owner: "a", Lease: "job:long", Generation: mr.Generation, Attempt: 1, Origin: OriginManual, Outcome: RunSucceeded, Recorded: true})
	})
}

// A slot run late by catch-up starts with its lateness as latency; a
// replica whose slot was completed elsewhere sees its claim refused.
func testObserverSeesCatchUpAndLostClaims(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		l := newLedger()
		job := Job{Name: "minutely", Schedule: "* * * * *", CatchUpWindow: 5 * time.Minute, Handler: l.handler(c.db)}
		c.registered(job.Name)         // at 12:00, by a replica that has stopped since
		c.db.Advance(90 * time.Second) // 12:01:30: the 12:01 slot was missed
		rec := &recorder{}
		c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: -1, Observer: rec}, job)
		slot := c.db.Now().Truncate(time.Minute)
		wantEvents(t, "catch-up", rec,
			ClockOffsetEvent{},
			ClaimEvent{Job: "minutely", Owner: "a", Slot: slot, Won: true, Origin: OriginCatchUp},
			RunStartEvent{Job: "minutely", Owner: "a", Slot: slot, Lease: "job:minutely", Generation: 1, Attempt: 1, Origin: OriginCatchUp, Latency: 30 * time.Second},
			RunEndEvent{Job: "minutely", Owner: "a", Slot: slot, Lease: "job:minutely", Generation: 1, Attempt: 1, Origin: OriginCatchUp, Outcome: RunSucceeded, Recorded: true},
		)
		// A second replica starting now finds the slot done.
		rec2 := &recorder{}
		c.startWith(Config{Owner: "b", Clock: offsetClock{c.db, 0}, Retention: -1, Observer: rec2}, job)
		wantEvents(t, "second start", rec2,
			ClockOffsetEvent{},
			ClaimEvent{Job: "minutely", Owner: "b", Slot: slot, Refusal: store.ClaimCompleted, Origin: OriginCatchUp},
		)
	})
}

// beginTx opens a transaction of the store's own kind on its database.
func beginTx(t *testing.T, s store.Store) (tx any, rollback func()) {
	t.Helper()
	ctx := context.Background()
	switch s := s.(type) {
	case *postgres.Store:
		tx, err := s.Pool().Begin(ctx)
		if err != nil {
			t.Error(err)
			return nil, func() {}
		}
		return tx, func() { _ = tx.Rollback(ctx) }
	case interface{ DB() *sql.DB }: // SQLite, MySQL
		tx, err := s.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Error(err)
			return nil, func() {}
		}
		return tx, func() { _ = tx.Rollback() }
	}
	t.Fatalf("no transaction for a %T", s)
	return nil, nil
}

// A run whose lease is taken over while it runs: the keeper's renewal
// finds it lost (one LeaseLostEvent naming the job and lease), the
// handler's fenced write is refused (one FenceRefusedEvent), and the run
// ends interrupted, recorded: the thief took the lease, not the slot, which
// is left for a replica to resume.
func testObserverSeesLeaseLostAndFenceRefused(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		const ttl = 30 * time.Second
		started := make(chan *Run, 1)
		fenced := make(chan error, 1)
		var st store.Store
		job := Job{Name: "victim", Schedule: "* * * * *", LeaseTTL: ttl, Handler: func(ctx context.Context, run *Run) error {
			started <- run
			<-ctx.Done()
			tx, rollback := beginTx(t, st)
			defer rollback()
			err := run.Fence(context.Background(), tx)
			fenced <- err
			return err
		}}
		rec := &recorder{}
		// No resume pass: it would try to claim the taken-over slot again
		// in the same step, which is another test's subject.
		a := c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: -1, ResumeEvery: -1, Observer: rec}, job)
		st = a.e.Store
		c.db.Advance(time.Minute)
		run := <-started
		c.settleHolding(1)
		slot := c.db.Now()
		wantEvents(t, "start", rec,
			ClockOffsetEvent{}, ClockOffsetEvent{}, // at Start, and at the minute's clock check
			ClaimEvent{Job: "victim", Owner: "a", Slot: slot, Won: true, Origin: OriginScheduled},
			RunStartEvent{Job: "victim", Owner: "a", Slot: slot, Lease: "job:victim", Generation: run.Generation, Attempt: 1, Origin: OriginScheduled})

		// This replica looks paused to the database: another takes the
		// lease over once it has expired by the database clock.
		held, err := st.LeaseGet(context.Background(), "job:victim")
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, err := st.LeaseAcquire(context.Background(), store.LeaseAcquireParams{Name: "job:victim", Owner: "thief", TTL: ttl, Now: held.ExpiresAt}); err != nil || !ok {
			t.Fatalf("takeover: %v, %v", ok, err)
		}
		c.db.Advance(ttl / 3) // the renewal finds the lease gone
		if err := <-fenced; !errors.Is(err, ErrLeaseLost) {
			t.Fatalf("fence after the takeover = %v, want ErrLeaseLost", err)
		}
		c.settle()
		wantEvents(t, "takeover", rec,
			ClockOffsetEvent{}, // the jump of ttl/3 past the loop's one-second sleep reads as a clock step
			LeaseLostEvent{Job: "victim", Lease: "job:victim", Generation: run.Generation},
			FenceRefusedEvent{Job: "victim", Lease: "job:victim", Generation: run.Generation},
			RunEndEvent{Job: "victim", Owner: "a", Slot: slot, Lease: "job:victim", Generation: run.Generation, Attempt: 1, Outcome: RunInterrupted, Duration: ttl / 3, Recorded: true, Origin: OriginScheduled})
	})
}

// An observer that panics costs its event, never a run.
func testObserverPanicDoesNotStopRuns(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		l := newLedger()
		job := Job{Name: "tick", Schedule: "* * * * *", Handler: l.handler(c.db)}
		panicky := ObserverFunc(func(Event) { panic("observer bug") })
		c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: -1, Observer: panicky}, job)
		start := c.db.Now()
		c.advance(3*time.Minute, time.Minute)
		l.wantEachOnce(t, "tick", start.Add(time.Minute), start.Add(4*time.Minute), time.Minute)
	})
}

// The observer is never called with the scheduler's lock held: one that
// calls back into the scheduler (Jobs takes the lock) on every event would
// deadlock here otherwise, through fires, skips, catch-up, manual runs and
// refusals.
func testObserverCalledWithoutTheSchedulerLock(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		var self atomic.Pointer[Scheduler]
		var events atomic.Int64
		obs := ObserverFunc(func(Event) {
			if s := self.Load(); s != nil {
				_ = s.Jobs()
			}
			events.Add(1)
		})
		b := newBlocker()
		c.db.Advance(30 * time.Second) // 12:00 is inside the catch-up window
		s, err := New(Config{Store: c.open(t), Owner: "a", Logger: quiet, Clock: offsetClock{c.db, 0}, Retention: -1, Observer: obs})
		if err != nil {
			t.Fatal(err)
		}
		self.Store(s)
		for _, j := range []Job{
			{Name: "long", Schedule: "* * * * *", Handler: b.handler},
			{Name: "late", Schedule: "* * * * *", CatchUpWindow: time.Minute, Handler: func(context.Context, *Run) error { return nil }},
		} {
			if err := s.Register(j); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		c.replicas = append(c.replicas, s)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = s.Stop(ctx)
		})
		c.settle()
		c.db.Advance(30 * time.Second) // 12:01: long starts and holds
		<-b.started
		c.settleHolding(1)
		c.db.Advance(time.Minute) // 12:02: skipped
		c.settleHolding(1)
		if _, err := s.Trigger(context.Background(), "long"); !errors.Is(err, ErrAlreadyExecuting) {
			t.Fatalf("Trigger = %v", err)
		}
		close(b.release)
		c.settle()
		if n := events.Load(); n < 10 {
			t.Fatalf("only %d events observed", n)
		}
	})
}

// Buffer-one: the overlapped slot is one refused claim that recorded it
// buffered (no skip), and when the run ends, a buffered claim won and its
// run, late by the time it waited.
func testObserverSeesBufferedClaim(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		b := newBlocker()
		rec := &recorder{}
		job := Job{Name: "long", Schedule: "* * * * *", Overlap: OverlapBufferOne, Handler: b.handler}
		c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: -1, ClockCheckEvery: time.Hour, Observer: rec}, job)
		t0 := c.db.Now()
		c.db.Advance(time.Minute)
		first := <-b.started
		c.settleHolding(1)
		c.db.Advance(time.Minute)
		c.settleHolding(1)
		m1, m2 := t0.Add(time.Minute), t0.Add(2*time.Minute)
		wantEvents(t, "overlap", rec,
			ClockOffsetEvent{},
			// Each minute's jump past the loop's one-second sleep reads to
			// the replica as a step of its clock: it measures again.
			ClockOffsetEvent{}, ClockOffsetEvent{},
			ClaimEvent{Job: "long", Owner: "a", Slot: m1, Won: true, Origin: OriginScheduled},
			RunStartEvent{Job: "long", Owner: "a", Slot: m1, Lease: "job:long", Generation: first.Generation, Attempt: 1, Origin: OriginScheduled},
			ClaimEvent{Job: "long", Owner: "a", Slot: m2, Refusal: store.ClaimHeld, Recorded: store.SlotBuffered, Origin: OriginScheduled},
		)
		c.db.Advance(30 * time.Second)
		c.settleHolding(1)
		b.release <- struct{}{}
		second := <-b.started
		c.settleHolding(1)
		close(b.release)
		c.settle()
		wantEvents(t, "the run ends", rec,
			ClockOffsetEvent{}, // the 30s jump
			RunEndEvent{Job: "long", Owner: "a", Slot: m1, Lease: "job:long", Generation: first.Generation, Attempt: 1, Outcome: RunSucceeded, Duration: 90 * time.Second, Recorded: true, Origin: OriginScheduled},
			ClaimEvent{Job: "long", Owner: "a", Slot: m2, Won: true, Origin: OriginBuffered},
			RunStartEvent{Job: "long", Owner: "a", Slot: m2, Lease: "job:long", Generation: second.Generation, Attempt: 1, Latency: 30 * time.Second, Origin: OriginBuffered},
			RunEndEvent{Job: "long", Owner: "a", Slot: m2, Lease: "job:long", Generation: second.Generation, Attempt: 1, Outcome: RunSucceeded, Recorded: true, Origin: OriginBuffered},
		)
	})
}

// A run cut short by a shutdown ends as interrupted on its replica, and
// another replica's resume pass claims it (attempt 2) and runs it.
func testObserverSeesInterruptedAndResumed(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		b := newBlocker()
		job := Job{Name: "long", Schedule: "* * * * *", Handler: b.handler}
		recA, recB := &recorder{}, &recorder{}
		a := c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: -1, ClockCheckEvery: time.Hour, ShutdownGrace: time.Second, Observer: recA}, job)
		c.db.Advance(time.Minute)
		first := <-b.started
		c.settleHolding(1)
		slot := c.db.Now()
		// b starts after the fire, so only a claimed the slot.
		bs, err := New(Config{Store: c.open(t), Owner: "b", Logger: quiet, Clock: offsetClock{c.db, 0}, Retention: -1, ClockCheckEvery: time.Hour, Observer: recB})
		if err != nil {
			t.Fatal(err)
		}
		if err := bs.Register(job); err != nil {
			t.Fatal(err)
		}
		if err := bs.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		c.replicas = append(c.replicas, bs)
		t.Cleanup(func() { _ = bs.Stop(context.Background()) })
		c.settleHolding(1)
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan error, 1)
		go func() { stopped <- a.Stop(ctx) }()
		<-a.loop.done
		c.waitForTimers(3) // b's loop, a's lease renewal and a's grace
		// The deploy's deadline passes during the grace: cancel the handler now.
		cancel()
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
		for i, r := range c.replicas {
			if r == a {
				c.replicas = append(c.replicas[:i], c.replicas[i+1:]...)
			}
		}
		wantEvents(t, "a", recA,
			ClockOffsetEvent{},
			ClockOffsetEvent{}, // the jump to the slot, past the loop's one-second sleep, reads as a clock step
			ClaimEvent{Job: "long", Owner: "a", Slot: slot, Won: true, Origin: OriginScheduled},
			RunStartEvent{Job: "long", Owner: "a", Slot: slot, Lease: "job:long", Generation: first.Generation, Attempt: 1, Origin: OriginScheduled},
			RunEndEvent{Job: "long", Owner: "a", Slot: slot, Lease: "job:long", Generation: first.Generation, Attempt: 1, Outcome: RunInterrupted, Recorded: true, Origin: OriginScheduled},
		)
		c.db.Advance(time.Second) // b's resume pass
		resumed := <-b.started
		c.settleHolding(1)
		close(b.release)
		c.settle()
		wantEvents(t, "b", recB,
			ClockOffsetEvent{},
			ClaimEvent{Job: "long", Owner: "b", Slot: slot, Won: true, Origin: OriginResume},
			RunStartEvent{Job: "long", Owner: "b", Slot: slot, Lease: "job:long", Generation: resumed.Generation, Attempt: 2, Latency: time.Second, Origin: OriginResume},
			RunEndEvent{Job: "long", Owner: "b", Slot: slot, Lease: "job:long", Generation: resumed.Generation, Attempt: 2, Outcome: RunSucceeded, Recorded: true, Origin: OriginResume},
		)
	})
}
