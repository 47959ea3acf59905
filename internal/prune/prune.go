// Package prune deletes history older than the retention, on one replica
// at a time (whichever takes the retention lease), in steps, each a
// transaction of its own, renewing its lease after each: it goes on for as
// long as the history needs (a prune in one transaction could only be
// bounded, and past some rate of runs it was cut off and rolled back every
// time).
package prune

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/internal/service"
	"github.com/cronfence/cronfence/store"
)

// A step that has not ended StepTimeout after the last renewal is
// cancelled, a minute before the lease would expire, so no other replica
// starts pruning beside it.
const (
	leaseTTL    = 5 * time.Minute
	StepTimeout = leaseTTL - time.Minute
)

// LeaseName is the lease a replica holds while it prunes.
const LeaseName = "cronfence:retention"

// Pruner prunes every Every, on a goroutine of its own: a prune of a large
// history takes long. Set its exported fields before its first Tick.
type Pruner struct {
	*service.Base
	Retention time.Duration // history older than this goes; not positive: never
	Every     time.Duration
	Timers    bool // the replica fires slots: an API-only one leaves pruning to those that do

	mu      sync.Mutex
	next    time.Time // the next prune, on this replica's clock
	running bool
	done    sync.WaitGroup
}

// Tick starts a prune when one is due and none is under way.
func (p *Pruner) Tick(ctx context.Context, now time.Time) {
	if p.Retention <= 0 || !p.Timers {
		return
	}
	p.mu.Lock()
	if now.Before(p.next) {
		p.mu.Unlock()
		return
	}
	p.next = now.Add(p.Every)
	if p.running {
		p.mu.Unlock()
		return // the last prune is still under way
	}
	p.running = true
	p.done.Add(1)
	p.mu.Unlock()
	p.Go(func() {
		defer p.done.Done()
		defer func() { p.mu.Lock(); p.running = false; p.mu.Unlock() }()
		p.prune(ctx)
	})
}

// Stop waits for a prune under way; it ends at once, its context being the
// loop's, which ended.
func (p *Pruner) Stop() { p.done.Wait() }

// prune deletes history older than the retention, on one replica at a time
// (whichever takes the retention lease).
func (p *Pruner) prune(ctx context.Context) {
	l, ok := p.TakeLease(ctx, LeaseName, leaseTTL)
	if !ok {
		return
	}
	defer func() {
		ctx, cancel := p.Bounded(context.WithoutCancel(ctx))
		defer cancel()
		_, _ = p.Store.LeaseRelease(ctx, l.Ref())
	}()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timeout := func() { cancel(ErrStepTimeout) }
	stopTimeout := clock.AfterFunc(p.Clock, StepTimeout, timeout)
	defer func() { stopTimeout() }()
	res, err := p.Store.Prune(ctx, store.PruneParams{
		Before: l.AcquiredAt.Add(-p.Retention),
		AfterStep: func(store.PruneResult) error {
			renewed, err := p.renew(ctx, l)
			if err != nil {
				return err
			}
			l = renewed
			stopTimeout()
			stopTimeout = clock.AfterFunc(p.Clock, StepTimeout, timeout)
			return nil
		},
	})
	if res.Slots > 0 || res.Runs > 0 {
		p.Log.Info("cronfence: pruned history", "slots", res.Slots, "runs", res.Runs, "retention", p.Retention)
	}
	switch {
	case err == nil:
	case errors.Is(context.Cause(ctx), ErrStepTimeout):
		p.Log.Warn("cronfence: prune stopped: a step did not end before its lease would expire; the next prune goes on from there", "timeout", StepTimeout)
	case ctx.Err() == nil: // (else the scheduler stops)
		p.Log.Warn("cronfence: prune stopped; the next prune goes on from there", "error", err)
	}
}

// ErrStepTimeout is the cause of a prune cancelled because a step
// outlasted StepTimeout.
var ErrStepTimeout = errors.New("a prune step did not end before its lease would expire")

// renew renews the retention lease between two steps of a prune.
func (p *Pruner) renew(ctx context.Context, l store.Lease) (store.Lease, error) {
	ctx, cancel := p.Bounded(ctx)
	defer cancel()
	return p.Store.LeaseRenew(ctx, store.LeaseRenewParams{LeaseRef: l.Ref(), TTL: leaseTTL})
}
