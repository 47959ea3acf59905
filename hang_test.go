package cronfence

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

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
		Store: withoutLiveness{throughProxy}, Logger: slog.New(slog.NewTextHandler(logs, nil))}, jobs...)
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
