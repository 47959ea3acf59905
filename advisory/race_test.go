package advisory_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cronfence/cronfence/advisory"
	"github.com/cronfence/cronfence/internal/pgtest"
)

// TestDoMutualExclusionUnderRace races replicas, each with its own pool and
// so its own session, on one name: never may two be inside fn at once.
func TestDoMutualExclusionUnderRace(t *testing.T) {
	t.Parallel()
	const replicas, rounds = 32, 20
	name := uniqueName(t)
	guards := make([]*advisory.Guard, replicas)
	for i := range guards {
		guards[i] = advisory.New(pgtest.NewPool(t))
	}
	// fn does a round trip of real work, so a broken lock would overlap
	// runs as often as it lets them through.
	work := pgtest.NewPool(t)

	var inside, maxInside, runs, skips atomic.Int32
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, g := range guards {
		wg.Go(func() {
			<-start
			for range rounds {
				ran, err := g.Do(context.Background(), name, func(ctx context.Context) error {
					n := inside.Add(1)
					defer inside.Add(-1)
					for m := maxInside.Load(); n > m && !maxInside.CompareAndSwap(m, n); m = maxInside.Load() {
					}
					runs.Add(1)
					_, err := work.Exec(ctx, "SELECT 1")
					return err
				})
				if err != nil {
					t.Errorf("Do: %v", err)
					return
				}
				if !ran {
					skips.Add(1)
				}
			}
		})
	}
	close(start)
	wg.Wait()

	if m := maxInside.Load(); m != 1 {
		t.Errorf("up to %d functions ran at once under one lock, want 1", m)
	}
	if runs.Load() == 0 {
		t.Error("no Do ever ran")
	}
	if got := runs.Load() + skips.Load(); got != replicas*rounds {
		t.Errorf("runs %d + skips %d = %d, want %d", runs.Load(), skips.Load(), got, replicas*rounds)
	}
	t.Logf("%d replicas x %d rounds: %d ran, %d skipped", replicas, rounds, runs.Load(), skips.Load())
}
