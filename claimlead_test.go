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

// TestClaimSentAheadIsJudgedAtTheSlot: on the real clock, a replica that
// fires a slot early by the database clock (its offset measured a little
// off, or its clock drifted since) still wins the slot with its first
// claim: the store waits for the slot, by its own clock, inside the claim.
// It used to refuse the claim not_due and the replica to try again 20 ms
// later, so a slot started 20–40 ms late. Nothing starts before its slot
// by the database clock.
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
			var slots []time.Time
			s, err := New(Config{Store: clockAhead{Store: st, by: 30 * time.Millisecond}, Owner: "a", Logger: quiet,
				Retention: -1, HeartbeatEvery: -1, Observer: obs})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Register(Job{Name: "tick", Schedule: "* * * * * *", Handler: func(_ context.Context, r *Run) error {
				mu.Lock()
				slots = append(slots, r.Slot)
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
			for _, slot := range slots {
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
			res, err := LockSlot(context.Background(), ahead, SlotLock{Name: "tick", Schedule: "* * * * * *", Owner: "host-a", Logger: quiet},
				func(context.Context, *Run) error { return nil })
			if err != nil || !res.Ran {
				t.Fatalf("LockSlot = %+v, %v; want run", res, err)
			}
			if n := counter.claims.Load(); n != 1 {
				t.Errorf("%d claims sent for one slot, want one", n)
			}
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
