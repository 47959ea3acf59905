package mysql

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// TestManyConcurrentCallsShareTheBoundedPool: a replica whose runs end by
// the hundred sends that many operations at once. They wait for the
// store's own connections (Config.MaxConns) instead of opening one each
// past the server's max_connections, which refused them (Error 1040), and
// every one succeeds.
func TestManyConcurrentCallsShareTheBoundedPool(t *testing.T) {
	t.Parallel()
	s, _ := migrated(t)
	const n = 300
	now := time.Now().Add(-time.Second)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			job := fmt.Sprintf("job-%d", i)
			r, err := s.SlotClaim(bg(), store.SlotClaimParams{Job: job, Slot: now, LeaseName: "job:" + job, Owner: "a", TTL: time.Minute, MaxAttempts: 1})
			if err == nil && !r.Claimed {
				err = fmt.Errorf("refused %s", r.Refusal)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("claim %d of %d at once: %v", i, n, err)
		}
	}
	if st := s.own.Stats(); st.MaxOpenConnections != DefaultMaxConns {
		t.Fatalf("the store's own pool allows %d connections, want %d", st.MaxOpenConnections, DefaultMaxConns)
	}
}
