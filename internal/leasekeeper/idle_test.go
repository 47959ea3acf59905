package leasekeeper_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/internal/leasekeeper"
	"github.com/cronfence/cronfence/internal/wait"
	"github.com/cronfence/cronfence/store"
)

// A keeper with nothing left to renew waits on no timer: an idle replica
// has no reason to wake, and the scheduler's tests count the timers of a
// settled replica. Taking out one lease of several leaves the loop asleep
// (that is what keeps a run's end cheap); taking out the last one does not.
func TestTheLastLeaseTakenOutLeavesTheKeeperWithoutATimer(t *testing.T) {
	t.Parallel()
	c := clock.NewFake(time.Unix(1_000_000, 0))
	k := leasekeeper.New(idleRenewer{}, leasekeeper.Options{Clock: c})
	t.Cleanup(k.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	first := k.Hold(ctx, store.Lease{Name: "job:a", Owner: "a", Generation: 1}, time.Minute, c.Now())
	second := k.Hold(ctx, store.Lease{Name: "job:b", Owner: "a", Generation: 1}, time.Minute, c.Now())
	if err := c.WaitForTimers(ctx, 1); err != nil {
		t.Fatal("the keeper never waited on a timer while holding leases")
	}
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := second.Stop(); err != nil {
		t.Fatal(err)
	}
	// The loop's goroutine drops its timer on its own time: polled.
	wait.For(t, wait.Forever, func() bool { return c.Timers() == 0 },
		func() string { return fmt.Sprintf("%d timers still waiting with no lease held", c.Timers()) })
}
