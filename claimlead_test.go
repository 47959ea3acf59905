package cronfence

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/wait"
	"github.com/cronfence/cronfence/store"
)

// clockAhead is a store whose clock reads run ahead of the database clock
// by by: to the replica measuring its offset, the same as its own clock
// drifting behind the database's after the measurement. It fires every
// slot that much early by the database clock.
type clockAhead struct {
	store.Store
	by time.Duration
}

func (c clockAhead) Now(ctx context.Context) (time.Time, error) {
	now, err := c.Store.Now(ctx)
	return now.Add(c.by), err
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
			s, err := New(Config{Store: clockAhead{Store: st, by: 30 * time.Millisecond}, Owner: "a", Logger: quiet,
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

// slotClaimCounter counts a store's claim calls.
type slotClaimCounter struct {
	store.Store
	claims atomic.Int64
}

func (c *slotClaimCounter) SlotClaim(ctx context.Context, p store.SlotClaimParams) (store.SlotClaimResult, error) {
	c.claims.Add(1)
	return c.Store.SlotClaim(ctx, p)
}

// TestLockSlotEarlyHostClaimsOnceAtTheSlot: a host whose clock runs ahead
// of the database's sleeps to the slot by its own clock, a little early by
// the database's; its one claim waits there for the slot, where it used to
// be refused not_due and sent again 100 ms later. Nothing runs before the
// slot by the database clock.
func TestLockSlotEarlyHostClaimsOnceAtTheSlot(t *testing.T) {
	for _, o := range storeOpeners {
		t.Run(o.name, func(t *testing.T) {
			t.Parallel()
			st := o.open(t, nil)(t) // the database's own clock
			counter := &slotClaimCounter{Store: st}
			ahead := clockAhead{Store: counter, by: 50 * time.Millisecond}
			bound := boundDBClock(t, st)
			var started time.Time
			res, err := LockSlot(context.Background(), ahead, SlotLock{Name: "tick", Schedule: "* * * * * *", Owner: "host-a", Logger: quiet},
				func(context.Context, *Run) error { started = time.Now(); return nil })
			if err != nil || !res.Ran {
				t.Fatalf("LockSlot = %+v, %v; want run", res, err)
			}
			if n := counter.claims.Load(); n != 1 {
				t.Errorf("%d claims sent for one slot, want one", n)
			}
			bound.wantNotBefore(t, res.Slot, started)
			sl, err := st.SlotGet(context.Background(), "tick", res.Slot)
			if err != nil {
				t.Fatal(err)
			}
			if sl.StartedAt.Before(res.Slot) {
				t.Errorf("slot %s started at %s by the database clock: early", res.Slot.Format(time.RFC3339Nano), sl.StartedAt.Format(time.RFC3339Nano))
			}
		})
	}
}

// TestARunCutBeforeItsSlotDoesNotStart: a run whose claim committed ahead
// of its slot (store.SlotClaimResult.Wait) waits for the slot before its
// handler starts; when the replica's runs are cancelled meanwhile (Stop's
// grace over), the handler does not start at all, and the slot is left as
// a run cut short by shutdown is: still running, its lease released, for
// a live replica to resume at once. (Stop cancels the runs only once its
// loop is done, which on a real clock usually outlasts the 50 ms a claim
// is sent ahead, so the run is started here by hand.)
func TestARunCutBeforeItsSlotDoesNotStart(t *testing.T) {
	for _, o := range storeOpeners {
		t.Run(o.name, func(t *testing.T) {
			t.Parallel()
			st := o.open(t, nil)(t)
			var called atomic.Int64
			s, err := New(Config{Store: st, Owner: "a", Logger: quiet, Retention: -1, HeartbeatEvery: -1})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Register(Job{Name: "yearly", Schedule: "0 0 1 1 *", Handler: func(context.Context, *Run) error {
				called.Add(1)
				return nil
			}}); err != nil {
				t.Fatal(err)
			}
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = s.Stop(context.Background()) }()
			now, err := st.Now(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			job := s.jobs.get("yearly")
			slot := now.Add(-time.Second).Truncate(time.Second)
			claim, err := st.SlotClaim(context.Background(), job.claimParams(slot, "a", 0, OriginScheduled, 0))
			if err != nil || !claim.Claimed {
				t.Fatalf("claim = %+v, %v", claim, err)
			}
			s.runner.cancel()
			ended := make(chan struct{})
			go func() {
				defer close(ended)
				s.runner.execute(runSpec{job: job, slot: slot, lease: claim.Lease, attempt: claim.Slot.Attempts, origin: OriginScheduled,
					sent: now, startAt: time.Now().Add(time.Hour)})
			}()
			select {
			case <-ended:
			case <-time.After(30 * time.Second):
				t.Fatal("a run cut before its slot (an hour away) did not end: it waits for the slot regardless")
			}
			if n := called.Load(); n != 0 {
				t.Fatalf("the handler ran %d time(s) although the run was cut before its slot", n)
			}
			sl, err := st.SlotGet(context.Background(), "yearly", slot)
			if err != nil {
				t.Fatal(err)
			}
			interrupted, err := st.SlotListInterrupted(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			resumable := false
			for _, i := range interrupted {
				resumable = resumable || (i.Job == "yearly" && i.Slot.Equal(slot))
			}
			if sl.Status != store.SlotRunning || !resumable {
				t.Fatalf("the slot after the cut = %+v (listed to resume: %v); want running and free to resume at once", sl, resumable)
			}
		})
	}
}
