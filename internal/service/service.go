// Package service is what every background part of a replica shares (the
// clock offset, the replica registry, the peers' notices, the absence
// checks, pruning, and the scheduler's own pipeline): the store it works
// on, its logger and clock, the bound of one store round trip, the failures
// an outage repeats, and the count of work in progress that tests wait on.
//
// The services are not goroutines with timers of their own: the scheduler's
// loop gives each a turn at its ticks (Tick), so a replica sleeps on one
// timer of its injected clock whatever it runs, and a test that moves that
// clock knows when the replica is idle. A service that works longer than a
// tick (a prune, a pass of the checks) does it on a goroutine of its own,
// counted in Busy, and its Stop waits for it.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/store"
)

// Base is what a service is given. Its fields are set once, before the
// service runs.
type Base struct {
	Store store.Store
	Log   *slog.Logger
	// Clock is the replica's own clock: timers and durations.
	Clock clock.Clock
	// Now is the clock slots are judged by: Clock corrected by its
	// measured offset from the database clock.
	Now          func() time.Time
	Owner        string
	StoreTimeout time.Duration
	// LiveKey is the replica's liveness key (store.Liveness), zero
	// without one; set once Start took it.
	LiveKey  *atomic.Int64
	Failures *Failures
	// Busy counts the work in progress beside the loop: the tests'
	// harness waits until it is zero and every loop sleeps.
	Busy *atomic.Int64
}

// ErrStoreTimeout is the cause of a store round trip that did not answer
// within Base.StoreTimeout.
var ErrStoreTimeout = errors.New("cronfence: the store did not answer within Config.StoreTimeout")

// Bounded returns parent bounded by StoreTimeout, for one store round trip
// a service makes on its own: a database that accepts connections but does
// not answer must not hold a service for good. Real time, not Clock: it
// bounds how long a real database takes to answer.
func (b *Base) Bounded(parent context.Context) (context.Context, func()) {
	return context.WithTimeoutCause(parent, b.StoreTimeout, ErrStoreTimeout)
}

// TimedOut is err, from a store call bounded by bctx (Bounded's, under
// ctx), wrapping ErrStoreTimeout when that bound ended the call and ctx did
// not.
func (b *Base) TimedOut(ctx, bctx context.Context, err error) error {
	if err != nil && context.Cause(bctx) == ErrStoreTimeout && ctx.Err() == nil {
		return fmt.Errorf("%w (after %s): %w", ErrStoreTimeout, b.StoreTimeout, err)
	}
	return err
}

// WarnRepeated logs a warning an outage repeats: once, then at most once
// every RepeatEvery while it goes on (Failures).
func (b *Base) WarnRepeated(msg string, args ...any) {
	b.Failures.Failed(b.Log, b.Clock.Now(), slog.LevelWarn, msg, args...)
}

// TakeLease takes a cluster-wide lease of the replica's (pruning, the
// absence checks) when it is free; false when another replica holds it or
// the store could not be reached, which is logged.
func (b *Base) TakeLease(ctx context.Context, name string, ttl time.Duration) (store.Lease, bool) {
	ctx, cancel := b.Bounded(ctx)
	defer cancel()
	failed := "cronfence: could not take the lease " + name
	l, ok, err := b.Store.LeaseAcquire(ctx, store.LeaseAcquireParams{Name: name, Owner: b.Owner, TTL: ttl, LiveKey: b.LiveKey.Load()})
	if err != nil {
		if ctx.Err() == nil {
			b.WarnRepeated(failed, "error", err)
		}
		return store.Lease{}, false
	}
	b.Failures.Over(failed)
	return l, ok
}

// Go runs f on a goroutine of its own, counted in Busy until it returns.
func (b *Base) Go(f func()) {
	b.Busy.Add(1)
	go func() {
		defer b.Busy.Add(-1)
		f()
	}()
}

// StopTimeout bounds the round trips a replica makes as it stops (giving a
// lease up, removing its registry row), so a store that went away does not
// hold up shutdown for long.
const StopTimeout = 5 * time.Second
