package cronfence

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// outageStore cuts the store off on demand (claims and clock reads fail)
// and counts the clock probes a replica sends meanwhile.
type outageStore struct {
	store.Store
	down   *atomic.Bool
	probes *atomic.Int64
}

var errCut = errors.New("connection refused (test outage)")

func (o *outageStore) Now(ctx context.Context) (time.Time, error) {
	if o.down.Load() {
		o.probes.Add(1)
		return time.Time{}, errCut
	}
	return o.Store.Now(ctx)
}

func (o *outageStore) SlotClaimBatch(ctx context.Context, items []store.SlotClaimParams) ([]store.SlotClaimResult, error) {
	if o.down.Load() {
		return nil, errCut
	}
	return o.Store.SlotClaimBatch(ctx, items)
}

// While the store is unreachable a replica probes it once a tick, not in a
// tight loop: the resume scan it skips meanwhile must not leave its loop
// sleeping for zero (the chaos suite saw 220,000 probes in 6 s, and the
// spinning replica starved its neighbours' lease renewals).
func TestStoreOutageDoesNotSpinTheLoop(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		var down atomic.Bool
		var probes atomic.Int64
		open := c.open
		c.open = func(t *testing.T) store.Store { return &outageStore{Store: open(t), down: &down, probes: &probes} }
		job := Job{Name: "tick", Schedule: "* * * * * *", Handler: nopHandler}
		c.start("replica", 0, job)
		c.advance(3*time.Second, time.Second)

		down.Store(true)
		c.advance(10*time.Second, time.Second)
		// One probe at the failed fire and at most a couple a tick after.
		if n := probes.Load(); n == 0 || n > 40 {
			t.Fatalf("%d clock probes during a 10 s outage; want a few a second, not a spin", n)
		}
		down.Store(false)
		c.advance(2*time.Second, time.Second)
	})
}

// flakyStore fails the next n claims, as a pooled connection a database
// restart killed fails the first statement sent on it.
type flakyStore struct {
	store.Store
	failNext *atomic.Int64
}

func (f *flakyStore) SlotClaimBatch(ctx context.Context, items []store.SlotClaimParams) ([]store.SlotClaimResult, error) {
	if f.failNext.Add(-1) >= 0 {
		return nil, errCut
	}
	return f.Store.SlotClaimBatch(ctx, items)
}

// One failed claim does not lose the slot: the replica tries once more at
// once, and only a second failure leaves the slot to catch-up.
func TestOneFailedClaimIsRetried(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		var failNext atomic.Int64
		open := c.open
		c.open = func(t *testing.T) store.Store { return &flakyStore{Store: open(t), failNext: &failNext} }
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
