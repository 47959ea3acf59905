package cronfence

import (
	"context"
	"errors"
	"time"

	"github.com/cronfence/cronfence/store"
)

// Pruning: one replica at a time, under the retention lease.

// A prune deletes in steps (store.PruneParams.Batch), each a transaction
// of its own, and renews its retention lease after each: it goes on for as
// long as the history needs, one replica at a time. (A prune in one
// transaction could only be bounded: a million slots and runs took 19 s on
// PostgreSQL on a 2-core machine, so past some rate of runs the hourly
// prune was cut off and rolled back every time, and the history grew
// without bound.) A step that has not ended pruneStepTimeout after the
// last renewal is cancelled, a minute before the lease would expire, so no
// other replica starts pruning beside it.
const (
	pruneLeaseTTL    = 5 * time.Minute
	pruneStepTimeout = pruneLeaseTTL - time.Minute
)

// pruneInBackground prunes on a goroutine of its own, one prune at a time,
// beside the loop: a prune of a large history takes long, and the loop
// that waited for it fired nothing meanwhile. Stop waits for it (it ends
// at once: ctx is the loop's, cancelled first).
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
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timeout := func() { cancel(errPruneStepTimeout) }
	stopTimeout := s.afterFunc(pruneStepTimeout, timeout)
	defer func() { stopTimeout() }()
	res, err := s.store.Prune(ctx, store.PruneParams{
		Before: l.AcquiredAt.Add(-s.cfg.Retention),
		AfterStep: func(store.PruneResult) error {
			renewed, err := s.renewPruneLease(ctx, l)
			if err != nil {
				return err
			}
			l = renewed
			stopTimeout()
			stopTimeout = s.afterFunc(pruneStepTimeout, timeout)
			return nil
		},
	})
	if res.Slots > 0 || res.Runs > 0 {
		s.log.Info("cronfence: pruned history", "slots", res.Slots, "runs", res.Runs, "retention", s.cfg.Retention)
	}
	switch {
	case err == nil:
	case errors.Is(context.Cause(ctx), errPruneStepTimeout):
		s.log.Warn("cronfence: prune stopped: a step did not end before its lease would expire; the next prune goes on from there", "timeout", pruneStepTimeout)
	case ctx.Err() == nil: // (else the scheduler stops)
		s.log.Warn("cronfence: prune stopped; the next prune goes on from there", "error", err)
	}
}

// errPruneStepTimeout is the cause of a prune cancelled because a step
// outlasted pruneStepTimeout.
var errPruneStepTimeout = errors.New("a prune step did not end before its lease would expire")

// renewPruneLease renews the retention lease between two steps of a prune.
func (s *Scheduler) renewPruneLease(ctx context.Context, l store.Lease) (store.Lease, error) {
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	return s.store.LeaseRenew(ctx, store.LeaseRenewParams{LeaseRef: l.Ref(), TTL: pruneLeaseTTL})
}

// takeLease takes a cluster-wide lease of this replica's (pruning, the
// absence checks) when it is free. False when another replica holds it or
// the store could not be reached, which is logged.
func (s *Scheduler) takeLease(ctx context.Context, name string, ttl time.Duration) (store.Lease, bool) {
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	failed := "cronfence: could not take the lease " + name
	l, ok, err := s.store.LeaseAcquire(ctx, store.LeaseAcquireParams{Name: name, Owner: s.cfg.Owner, TTL: ttl, LiveKey: s.liveKey})
	if err != nil {
		if ctx.Err() == nil {
			s.warnRepeated(failed, "error", err)
		}
		return store.Lease{}, false
	}
	s.failures.over(failed)
	return l, ok
}
