package cronfence

import (
	"context"
	"time"

	"github.com/cronfence/cronfence/store"
)

// Pruning: one replica at a time, under the retention lease.

// A prune is bounded by its lease, not by StoreTimeout: it runs beside the
// loop, and an hour of a busy cluster's history takes longer than the
// loop's round trips may (a million slots and runs took 19 s on PostgreSQL
// on a 2-core machine); cut off, it was rolled back whole, hour after hour,
// and the history grew without bound. It ends a minute before its lease
// expires, so no other replica starts pruning beside it.
const (
	pruneLeaseTTL = 5 * time.Minute
	pruneTimeout  = pruneLeaseTTL - time.Minute
)

// pruneInBackground prunes on a goroutine of its own, one prune at a time,
// beside the loop: a prune of a large history takes long (see
// pruneTimeout), and the loop that waited for it fired nothing meanwhile.
// Stop waits for it (it ends at once: ctx is the loop's, cancelled first).
func (s *Scheduler) pruneInBackground(ctx context.Context) {
	if !s.pruning.CompareAndSwap(false, true) {
		return // the last prune is still under way
	}
	s.beside(func() {
		defer s.pruning.Store(false)
		s.prune(ctx)
	})
}

// prune deletes history older than the retention, on one replica at a time
// (whichever takes the retention lease).
func (s *Scheduler) prune(ctx context.Context) {
	l, ok := s.takeLease(ctx, "cronfence:retention", pruneLeaseTTL)
	if !ok {
		return
	}
	defer func() {
		ctx, cancel := s.bounded(context.WithoutCancel(ctx))
		defer cancel()
		_, _ = s.store.LeaseRelease(ctx, l.Ref())
	}()
	ctx, cancel := context.WithTimeout(ctx, pruneTimeout)
	defer cancel()
	res, err := s.store.Prune(ctx, store.PruneParams{Before: l.AcquiredAt.Add(-s.cfg.Retention)})
	if err != nil {
		s.log.Warn("cronfence: prune failed", "error", err)
		return
	}
	if res.Slots > 0 || res.Runs > 0 {
		s.log.Info("cronfence: pruned history", "slots", res.Slots, "runs", res.Runs, "retention", s.cfg.Retention)
	}
}

// takeLease takes a cluster-wide lease of this replica's (pruning, the
// absence checks) when it is free. False when another replica holds it or
// the store could not be reached, which is logged.
func (s *Scheduler) takeLease(ctx context.Context, name string, ttl time.Duration) (store.Lease, bool) {
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	l, ok, err := s.store.LeaseAcquire(ctx, store.LeaseAcquireParams{Name: name, Owner: s.cfg.Owner, TTL: ttl, LiveKey: s.liveKey})
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("cronfence: could not take a lease", "lease", name, "error", err)
		}
		return store.Lease{}, false
	}
	return l, ok
}
