// Package leasekeeper keeps a held lease alive while work runs under it, and
// stops that work the moment the lease can no longer be trusted.
//
// A Keeper renews every TTL/3. The work's context is cancelled, with a cause
// wrapping store.ErrLeaseLost, as soon as either
//
//   - a renewal affects no row: another owner took the lease over, or it
//     expired while this process was paused; or
//   - renewals keep failing (the database is unreachable) until the lease,
//     as far as this process can tell, has expired.
//
// "As far as this process can tell" is measured on the local monotonic
// clock from the moment the last successful renewal was sent: the database
// set the expiry at least TTL after that moment, so the lease is certainly
// valid until then. Cancelling is not fencing: a paused process does not
// see its context close. Writes must still be fenced.
package leasekeeper

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/store"
)

// Renewer is the part of store.Store a Keeper uses.
type Renewer interface {
	LeaseRenew(ctx context.Context, p store.LeaseRenewParams) (store.Lease, error)
}

// Config configures a Keeper.
type Config struct {
	// Store renews the lease.
	Store Renewer
	// Lease is the held lease, as acquired.
	Lease store.Lease
	// TTL is the lease's time to live; renewals come every TTL/3.
	TTL time.Duration
	// Acquired is when, on Clock, the acquisition that produced Lease was
	// sent. The lease is trusted until Acquired + TTL. Defaults to the time
	// Start is called, which trusts it slightly longer than is certain.
	Acquired time.Time
	// Clock drives renewals. Defaults to the process clock.
	Clock clock.Clock
	// OnRenew, when set, is called after every renewal attempt with its
	// result. It is a hook for observers and tests; it must not block.
	OnRenew func(store.Lease, error)
}

// Keeper renews one lease in the background.
type Keeper struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelCauseFunc
	stop   chan struct{}
	done   chan struct{}

	mu   sync.Mutex
	lost error // set when the lease was lost
}

// Start begins renewing cfg.Lease. The returned Keeper's Context is the one
// the work must use: it ends when ctx does or when the lease is lost.
func Start(ctx context.Context, cfg Config) *Keeper {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Acquired.IsZero() {
		cfg.Acquired = cfg.Clock.Now()
	}
	k := &Keeper{cfg: cfg, stop: make(chan struct{}), done: make(chan struct{})}
	k.ctx, k.cancel = context.WithCancelCause(ctx)
	go k.run()
	return k
}

// Context is cancelled when the lease is lost (with a cause wrapping
// store.ErrLeaseLost) or when the parent context ends.
func (k *Keeper) Context() context.Context { return k.ctx }

// Lost returns the reason the lease was lost, wrapping store.ErrLeaseLost, or
// nil while it is held.
func (k *Keeper) Lost() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lost
}

// Stop ends renewing and waits for the renewal loop to exit. It returns the
// same as Lost. The lease itself is not released: that is the caller's.
func (k *Keeper) Stop() error {
	select {
	case <-k.stop:
	default:
		close(k.stop)
	}
	<-k.done
	k.cancel(context.Canceled)
	return k.Lost()
}

func (k *Keeper) run() {
	defer close(k.done)
	interval := k.cfg.TTL / 3
	// Retries after a failed renewal come faster than renewals, so a short
	// outage is ridden out while the lease is still valid.
	retry := max(k.cfg.TTL/30, 10*time.Millisecond)
	// trustedUntil is when the lease may have expired, by the local clock.
	trustedUntil := k.cfg.Acquired.Add(k.cfg.TTL)
	lease := k.cfg.Lease
	wait := interval
	var lastErr error
	for {
		now := k.cfg.Clock.Now()
		if remaining := trustedUntil.Sub(now); wait > remaining {
			wait = remaining
		}
		timer := k.cfg.Clock.NewTimer(wait)
		select {
		case <-k.stop:
			timer.Stop()
			return
		case <-k.ctx.Done():
			timer.Stop()
			return
		case <-timer.C():
		}

		sent := k.cfg.Clock.Now()
		if !sent.Before(trustedUntil) {
			k.lose(fmt.Errorf("lease %q at generation %d: renewals failed until it expired (last error: %v): %w",
				lease.Name, lease.Generation, lastErr, store.ErrLeaseLost))
			return
		}
		// A renewal that hangs must not outlive the lease.
		attemptCtx, cancel := context.WithTimeout(k.ctx, trustedUntil.Sub(sent))
		renewed, err := k.cfg.Store.LeaseRenew(attemptCtx, store.LeaseRenewParams{LeaseRef: lease.Ref(), TTL: k.cfg.TTL})
		cancel()
		if k.cfg.OnRenew != nil {
			k.cfg.OnRenew(renewed, err)
		}
		switch {
		case err == nil:
			lease, lastErr = renewed, nil
			trustedUntil = sent.Add(k.cfg.TTL)
			wait = interval
		case errors.Is(err, store.ErrLeaseLost):
			k.lose(fmt.Errorf("lease %q at generation %d was taken over or expired: %w", lease.Name, lease.Generation, err))
			return
		case k.ctx.Err() != nil:
			return // the work is ending anyway
		default:
			lastErr, wait = err, retry
		}
	}
}

func (k *Keeper) lose(err error) {
	k.mu.Lock()
	k.lost = err
	k.mu.Unlock()
	k.cancel(err)
}
