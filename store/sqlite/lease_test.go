package sqlite

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// TestLeaseAcquireRaceAcrossStores races 32 goroutines, half on each of two
// Stores on the same file (two processes, two connection pools), for one
// lease, round after round. Each round pins a clock past the previous
// round's expiry, so every round the lease is up for grabs: exactly one
// goroutine must win it, at a generation one higher than the round before,
// and every loser must be shown that winner as the holder.
func TestLeaseAcquireRaceAcrossStores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, path := migrated(t)
	stores := []*Store{a, openStore(t, path, nil)}

	const (
		goroutines = 32
		rounds     = 10
		ttl        = time.Minute
	)
	base := time.Date(2026, 9, 25, 0, 0, 0, 0, time.UTC)
	type result struct {
		lease    store.Lease
		acquired bool
		err      error
	}
	var lastGen int64
	for round := range rounds {
		now := base.Add(time.Duration(round) * time.Hour) // the previous lease expired long ago
		results := make([]result, goroutines)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				<-start
				r := &results[g]
				r.lease, r.acquired, r.err = stores[g%2].LeaseAcquire(ctx, store.LeaseAcquireParams{
					Name: "race", Owner: fmt.Sprintf("owner-%d", g), TTL: ttl, Now: now,
				})
			})
		}
		close(start)
		wg.Wait()

		var winners []store.Lease
		for g, r := range results {
			if r.err != nil {
				t.Fatalf("round %d, goroutine %d: %v", round, g, r.err)
			}
			if r.acquired {
				winners = append(winners, r.lease)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: %d winners %+v, want exactly 1", round, len(winners), winners)
		}
		w := winners[0]
		if w.Generation != lastGen+1 {
			t.Fatalf("round %d: winner has generation %d, want %d", round, w.Generation, lastGen+1)
		}
		if !w.AcquiredAt.Equal(now) || !w.ExpiresAt.Equal(now.Add(ttl)) {
			t.Errorf("round %d: winner acquired at %v expiring %v, want %v and %v", round, w.AcquiredAt, w.ExpiresAt, now, now.Add(ttl))
		}
		lastGen = w.Generation
		for g, r := range results {
			if !r.acquired && r.lease != w {
				t.Errorf("round %d, goroutine %d: refused with holder %+v, want the winner %+v", round, g, r.lease, w)
			}
		}
	}
	got, err := stores[1].LeaseGet(ctx, "race")
	if err != nil || got.Generation != rounds {
		t.Fatalf("LeaseGet = %+v, %v; want generation %d", got, err, rounds)
	}
}
