package cronfence

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/cronfence/cronfence/store"
)

// A prune deletes in steps (store.PruneParams.Batch), each a transaction
// of its own, and renews its retention lease after each: it goes on for as
// long as the history needs, one replica at a time (a prune in one
// transaction could only be bounded, and past some rate of runs it was cut
// off and rolled back every time). A step that has not ended
// pruneStepTimeout after the last renewal is cancelled, a minute before
// the lease would expire, so no other replica starts pruning beside it.
const (
	pruneLeaseTTL    = 5 * time.Minute
	pruneStepTimeout = pruneLeaseTTL - time.Minute
)

// pruner deletes history older than Config.Retention every PruneEvery, on
// one replica at a time (whichever takes the retention lease), on a
// goroutine of its own: a prune of a large history takes long.
type pruner struct {
	e *env

	mu      sync.Mutex
	next    time.Time // the next prune, on this replica's clock
	running bool
	done    sync.WaitGroup
}

// tick starts a prune when one is due and none is under way.
func (p *pruner) tick(ctx context.Context, now time.Time) {
	if p.e.cfg.Retention <= 0 || !p.e.timers() {
		return
	}
	p.mu.Lock()
	if now.Before(p.next) {
		p.mu.Unlock()
		return
	}
	p.next = now.Add(p.e.cfg.PruneEvery)
	if p.running {
		p.mu.Unlock()
		return // the last prune is still under way
	}
	p.running = true
	p.done.Add(1)
	p.mu.Unlock()
	p.e.busy.Add(1)
	go func() {
		defer p.e.busy.Add(-1)
		defer p.done.Done()
		defer func() { p.mu.Lock(); p.running = false; p.mu.Unlock() }()
		p.prune(ctx)
	}()
}

// stop waits for a prune under way; it ends at once, its context being the
// loop's, which ended.
func (p *pruner) stop() { p.done.Wait() }

// prune deletes history older than the retention, on one replica at a time
// (whichever takes the retention lease).
func (p *pruner) prune(ctx context.Context) {
	l, ok := p.e.takeLease(ctx, "cronfence:retention", pruneLeaseTTL)
	if !ok {
		return
	}
	defer func() {
		ctx, cancel := p.e.bounded(context.WithoutCancel(ctx))
		defer cancel()
		_, _ = p.e.store.LeaseRelease(ctx, l.Ref())
	}()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timeout := func() { cancel(errPruneStepTimeout) }
	stopTimeout := afterFunc(p.e.cfg.Clock, pruneStepTimeout, timeout)
	defer func() { stopTimeout() }()
	res, err := p.e.store.Prune(ctx, store.PruneParams{
		Before: l.AcquiredAt.Add(-p.e.cfg.Retention),
		AfterStep: func(store.PruneResult) error {
			renewed, err := p.renew(ctx, l)
			if err != nil {
				return err
			}
			l = renewed
			stopTimeout()
			stopTimeout = afterFunc(p.e.cfg.Clock, pruneStepTimeout, timeout)
			return nil
		},
	})
	if res.Slots > 0 || res.Runs > 0 {
		p.e.log.Info("cronfence: pruned history", "slots", res.Slots, "runs", res.Runs, "retention", p.e.cfg.Retention)
	}
	switch {
	case err == nil:
	case errors.Is(context.Cause(ctx), errPruneStepTimeout):
		p.e.log.Warn("cronfence: prune stopped: a step did not end before its lease would expire; the next prune goes on from there", "timeout", pruneStepTimeout)
	case ctx.Err() == nil: // (else the scheduler stops)
		p.e.log.Warn("cronfence: prune stopped; the next prune goes on from there", "error", err)
	}
}

// errPruneStepTimeout is the cause of a prune cancelled because a step
// outlasted pruneStepTimeout.
var errPruneStepTimeout = errors.New("a prune step did not end before its lease would expire")

// renew renews the retention lease between two steps of a prune.
func (p *pruner) renew(ctx context.Context, l store.Lease) (store.Lease, error) {
	ctx, cancel := p.e.bounded(ctx)
	defer cancel()
	return p.e.store.LeaseRenew(ctx, store.LeaseRenewParams{LeaseRef: l.Ref(), TTL: pruneLeaseTTL})
}
