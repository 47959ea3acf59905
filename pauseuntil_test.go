package cronfence

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// Three replicas run a minutely job paused until 12:05. The slots before
// it are settled skipped, reason paused, each once; from 12:05 on the job
// runs again, each slot once, with no replica restarted and nothing
// written after the pause. A pause until a time already past is refused.
func TestPauseUntilResumesByItselfOnEveryReplica(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		l := newLedger()
		job := Job{Name: "minutely", Schedule: "* * * * *", Handler: l.handler(c.db)}
		a := c.start("a", 0, job)
		c.start("b", 0, job)
		c.start("c", 0, job)
		at := func(m int) time.Time { return time.Date(2026, 3, 1, 12, m, 0, 0, time.UTC) }

		ctx := context.Background()
		if _, err := a.PauseUntil(ctx, "minutely", at(0), "ops", ""); !errors.Is(err, store.ErrInvalidArgument) {
			t.Fatalf("a pause until now = %v, want refused as invalid", err)
		}
		js, err := a.PauseUntil(ctx, "minutely", at(5), "ops", "vendor window")
		if err != nil || js.EnabledOverride == nil || *js.EnabledOverride || !js.Until.Equal(at(5)) {
			t.Fatalf("PauseUntil = %+v, %v", js, err)
		}
		c.advance(10*time.Minute, 10*time.Second)

		if got, want := l.started("minutely"), []time.Time{at(5), at(6), at(7), at(8), at(9), at(10)}; !slices.Equal(got, want) {
			t.Fatalf("ran %v, want %v: nothing while paused, each slot once from the pause's end", got, want)
		}
		runs, err := a.e.Store.RunList(ctx, store.RunListParams{Job: "minutely", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		paused := map[time.Time]int{}
		for _, r := range runs {
			if r.Skipped {
				if r.Reason != string(store.ClaimPaused) {
					t.Fatalf("slot %s skipped for %q, want paused", r.Slot, r.Reason)
				}
				paused[r.Slot]++
			}
		}
		for m := 1; m <= 4; m++ {
			if paused[at(m)] != 1 {
				t.Fatalf("slot %s has %d paused skip rows, want one (rows: %v)", at(m).Format(time.TimeOnly), paused[at(m)], paused)
			}
		}
		if len(paused) != 4 {
			t.Fatalf("paused skips of %d slots, want the 4 before the pause's end: %v", len(paused), paused)
		}
		l.wantNoneTwiceOrEarly(t)
	})
}
