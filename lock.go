package cronfence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/internal/leasekeeper"
	"github.com/cronfence/cronfence/store"
)

// releaseTimeout bounds the release at the end of Lock, which runs even
// when the caller's context has ended (a shutdown should hand the lease over
// at once, not leave it to expire).
const releaseTimeout = 5 * time.Second

// Lock runs fn under the lease name, held by this process (OwnerID) for ttl
// and renewed every ttl/3 while fn runs.
//
// When another owner holds the lease, fn does not run and Lock returns
// (false, nil): losing the race is not an error. Otherwise fn gets the lease,
// whose generation fences its writes (Lease.Fence), and a context that is
// cancelled the moment the lease is lost or ctx ends. The lease is released
// when fn returns, even when it panics.
//
// The error is fn's, joined with one wrapping ErrLeaseLost when the lease
// was lost during fn: then fn's work may have been cut short and must be
// treated as not done. Bad arguments return an error wrapping
// store.ErrInvalidArgument without touching the store.
//
// Lock guards against overlap only. A fast job that releases its lease and
// a replica whose timer fires a little later will both run: to run a
// scheduled occurrence once, claim its slot (store.Store.SlotClaim), which
// remembers completed windows.
func Lock(ctx context.Context, s store.Store, name string, ttl time.Duration, fn func(ctx context.Context, lease *Lease) error) (ran bool, err error) {
	return LockWith(ctx, s, name, ttl, LockOptions{}, fn)
}

// LockOptions tune LockWith. The zero value is Lock's behaviour.
type LockOptions struct {
	// Liveness holds, on a store that keeps liveness (store.Liveness:
	// PostgreSQL), a liveness session of the lock's own while the lease is
	// held, recorded with the lease: should this process die holding it
	// (kill -9, a crash, a lost host), the name is free for the next taker
	// at once instead of after ttl. It costs a database connection for
	// the lock's life, and the lease's owner is then an id of the lock's
	// own (OwnerID, "/lock-" and a random suffix). When the session cannot
	// be taken, the lock is held without it, freed at its TTL. On a store
	// without liveness it changes nothing.
	Liveness bool

	// Test seams: nil in production.
	clock   clock.Clock
	onRenew func([]store.Lease, error)
}

// LockWith is Lock with options.
func LockWith(ctx context.Context, s store.Store, name string, ttl time.Duration, opts LockOptions, fn func(ctx context.Context, lease *Lease) error) (ran bool, err error) {
	return lock(ctx, s, name, ttl, fn, opts)
}

func lock(ctx context.Context, s store.Store, name string, ttl time.Duration, fn func(context.Context, *Lease) error, opts LockOptions) (ran bool, err error) {
	switch {
	case s == nil:
		return false, errInvalid("Lock needs a store, got nil")
	case fn == nil:
		return false, errInvalid(fmt.Sprintf("Lock %q needs a function to run, got nil", name))
	}
	if err := store.ValidateName("lease name", name); err != nil {
		return false, fmt.Errorf("cronfence: %w", err)
	}
	if err := store.ValidateTTL(ttl); err != nil {
		return false, fmt.Errorf("cronfence: lock %q: %w", name, err)
	}
	if opts.clock == nil {
		opts.clock = clock.Real{}
	}

	owner, liveKey := OwnerID(), int64(0)
	if lv, ok := s.(store.Liveness); ok && opts.Liveness {
		// An owner of the lock's own: the process's may hold its liveness
		// lock already (a scheduler), and two locks may run at once.
		owner = OwnerID() + "/lock-" + randomHex(4)
		if key, release, err := lv.LivenessHold(ctx, owner); err == nil {
			liveKey = key
			defer release() // after the lease's release below: deferred first
		}
	}
	sent := opts.clock.Now()
	held, acquired, err := s.LeaseAcquire(ctx, store.LeaseAcquireParams{Name: name, Owner: owner, TTL: ttl, LiveKey: liveKey})
	if err != nil {
		return false, fmt.Errorf("cronfence: lock %q: %w", name, err)
	}
	if !acquired {
		return false, nil
	}

	keeper := leasekeeper.New(s, leasekeeper.Options{Clock: opts.clock, OnRenew: opts.onRenew})
	hold := keeper.Hold(ctx, held, ttl, sent)
	defer func() {
		lost := hold.Stop()
		keeper.Close()
		// Release even when ctx has ended; a release by a lost generation
		// touches nothing, so it is always safe to send.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		defer cancel()
		_, releaseErr := s.LeaseRelease(rctx, held.Ref())
		if lost != nil {
			err = errors.Join(err, fmt.Errorf("cronfence: lock %q: %w", name, lost))
		} else if releaseErr != nil {
			// The work finished under the lease; the lease will expire by
			// itself. Report it, but the run stands.
			err = errors.Join(err, fmt.Errorf("cronfence: lock %q: release failed, the lease expires at its TTL: %w", name, releaseErr))
		}
	}()
	return true, fn(hold.Context(), newLease(held, s))
}

// Lease is one holding of a named lease: who holds it and under which
// generation, the fencing token.
type Lease struct {
	Name       string
	Owner      string
	Generation int64     // strictly increasing per name, never reset
	ExpiresAt  time.Time // as of acquisition, by the database clock; renewals move it

	store store.Store
}

// Fence checks, inside the caller's own transaction tx, that this generation
// still holds the lease, and keeps it so until tx ends: on PostgreSQL the
// lease row is held FOR KEY SHARE, so a takeover waits for the commit (and
// the holder's renewals do not); on SQLite the transaction's write lock does
// the same, and holds up every other write to the file meanwhile. tx is a pgx.Tx or a *sql.Tx on
// the store's database (see each store's LeaseFence for what it accepts).
//
// It returns an error wrapping ErrLeaseLost when fenced out: roll back, the
// write must not commit. Call it in every transaction that writes under the
// lease, right before the writes, not once at the start of the work.
func (l *Lease) Fence(ctx context.Context, tx any) error {
	return l.store.LeaseFence(ctx, tx, l.Name, l.Generation)
}

func newLease(l store.Lease, s store.Store) *Lease {
	return &Lease{Name: l.Name, Owner: l.Owner, Generation: l.Generation, ExpiresAt: l.ExpiresAt, store: s}
}
