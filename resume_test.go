package cronfence

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// An attempt whose process died mid-run leaves a trace: the replica that
// resumes its slot records it first, as its holding's run row
// (interrupted, its owner, generation, start, and as its end its lease's
// expiry, saying how it was found dead), once across the replicas that
// find it, and the next attempt's row follows it.
func TestResumeRecordsTheDeadAttempt(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		ctx := context.Background()
		st := c.open(t)
		slot := c.db.Now().Add(-time.Minute)
		// Attempt 1 by "dead", whose process died: its lease expired 30 s ago.
		first, err := st.SlotClaim(ctx, store.SlotClaimParams{Job: "long", Slot: slot, LeaseName: "job:long", Owner: "dead",
			TTL: 30 * time.Second, MaxAttempts: 3, Now: slot})
		if err != nil || !first.Claimed {
			t.Fatalf("attempt 1's claim = %+v, %v", first, err)
		}

		l := newLedger()
		job := Job{Name: "long", Schedule: "0 0 1 1 *", MaxAttempts: 3, LeaseTTL: 30 * time.Second, Handler: l.handler(c.db)}
		c.start("a", 0, job)
		c.start("b", 0, job)
		c.advance(time.Second, time.Second) // a resume scan on each replica
		c.wantNeverDown()
		if n := l.ran("long", slot); n != 1 {
			t.Fatalf("the dead slot ran %d times, want once (attempt 2)", n)
		}
		runs, err := st.RunList(ctx, store.RunListParams{Job: "long"})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 2 || !runs[0].Success || runs[0].Attempt != 2 {
			dumpRuns(t, st, "long")
			t.Fatalf("%d run rows; want attempt 2's success after attempt 1's interrupted row", len(runs))
		}
		dead := runs[1]
		if dead.Attempt != 1 || dead.Success || dead.Reason != store.ReasonInterrupted || dead.Owner != "dead" ||
			dead.Generation != first.Lease.Generation || dead.LeaseName != "job:long" || !dead.StartedAt.Equal(slot) ||
			!dead.FinishedAt.Equal(first.Lease.ExpiresAt) || !strings.Contains(dead.Error, "the run by dead at generation") ||
			!strings.HasSuffix(dead.Error, "("+store.DeadLeaseExpired+")") {
			t.Fatalf("attempt 1's row = %+v; want it interrupted, by dead at generation %d, from its start to its lease's expiry %s, saying its lease expired",
				dead, first.Lease.Generation, first.Lease.ExpiresAt)
		}
	})
}
