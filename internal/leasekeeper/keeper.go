// Package leasekeeper keeps held leases alive while work runs under them,
// and stops that work the moment its lease can no longer be trusted.
//
// One Keeper serves a whole replica: every lease it holds is renewed in one
// batched round trip (store.Store.LeaseRenewBatch) when the earliest of them
// is due, each at a third of its TTL. A lease's work context is cancelled,
// with a cause wrapping store.ErrLeaseLost, as soon as either
//
//   - a renewal leaves it out: another owner took it over, or it expired
//     while this process was paused; or
//   - renewals keep failing (the database is unreachable) until the lease,
//     as far as this process can tell, has expired.
//
// "As far as this process can tell" is measured on the keeper's clock from
// the moment the last successful renewal (or the acquisition) was sent: the
// database set the expiry at least TTL after that moment, so the lease is
// certainly valid until then. Cancelling is not fencing: a paused process
// does not see its context close. Writes must still be fenced.
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
	LeaseRenewBatch(ctx context.Context, items []store.LeaseRenewParams) ([]store.Lease, error)
}

// Options configure a Keeper. The zero value is valid.
type Options struct {
	// Clock drives renewals. Defaults to the process clock.
	Clock clock.Clock
	// OnRenew, when set, is called after every renewal round trip with the
	// leases renewed and the error. A hook for observers and tests; it must
	// not block.
	OnRenew func(renewed []store.Lease, err error)
}

// Keeper renews a set of leases in the background.
type Keeper struct {
	store Renewer
	opts  Options

	mu   sync.Mutex
	idle *sync.Cond // signalled when a renewal round trip ends (on mu)
	held map[*Hold]struct{}
	wake chan struct{} // a lease was added: recompute the next renewal
	// wakeAt is when the renewal loop next looks at the leases (the
	// earliest renewal or expiry when it last looked); zero when it waits
	// for a lease to be added. A lease added with a later time does not
	// wake it: a replica starting thousands of runs a second would
	// otherwise have it go through every held lease at every start.
	wakeAt time.Time
	closed bool
	done   chan struct{}
	stop   chan struct{}
}

// Hold is one lease kept by a Keeper.
type Hold struct {
	k      *Keeper
	ttl    time.Duration
	ctx    context.Context
	cancel context.CancelCauseFunc
	onLost func(error) // may be nil

	// guarded by k.mu
	lease        store.Lease
	nextRenewal  time.Time // on the keeper's clock
	trustedUntil time.Time
	lastErr      error
	lost         error
	released     bool
	inflight     bool // a renewal of it is on its way to the store
	quiet        bool // between Quiesce and Resume: neither renewed nor judged expired
}

// New starts a Keeper. Close it to stop.
func New(r Renewer, opts Options) *Keeper {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	k := &Keeper{
		store: r, opts: opts, held: map[*Hold]struct{}{},
		wake: make(chan struct{}, 1), done: make(chan struct{}), stop: make(chan struct{}),
	}
	k.idle = sync.NewCond(&k.mu)
	go k.run()
	return k
}

// Hold starts renewing lease, acquired with ttl by a request sent at sent
// (on the keeper's clock; zero means now). The Hold's Context is the one
// the work must use: it ends when ctx does or when the lease is lost.
func (k *Keeper) Hold(ctx context.Context, lease store.Lease, ttl time.Duration, sent time.Time) *Hold {
	return k.HoldFunc(ctx, lease, ttl, sent, nil)
}

// HoldFunc is Hold, and calls onLost (when not nil) once if the lease is
// lost while held, right after the Hold's context is cancelled, with the
// cause (wrapping store.ErrLeaseLost). It is called from the keeper's
// goroutine, without the keeper's lock, and must not block. Stop and Close
// are not losses.
func (k *Keeper) HoldFunc(ctx context.Context, lease store.Lease, ttl time.Duration, sent time.Time, onLost func(error)) *Hold {
	if sent.IsZero() {
		sent = k.opts.Clock.Now()
	}
	h := &Hold{k: k, ttl: ttl, lease: lease, nextRenewal: sent.Add(ttl / 3), trustedUntil: sent.Add(ttl), onLost: onLost}
	h.ctx, h.cancel = context.WithCancelCause(ctx)
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		h.lose(errors.New("lease keeper closed"))
		return h
	}
	k.held[h] = struct{}{}
	sooner := k.wakeAt.IsZero() || h.dueAt().Before(k.wakeAt)
	k.mu.Unlock()
	if sooner {
		k.poke()
	}
	return h
}

// Close stops renewing every lease and waits for the renewal loop to exit.
// Work still running under a Hold has its context cancelled.
func (k *Keeper) Close() {
	k.mu.Lock()
	if !k.closed {
		k.closed = true
		close(k.stop)
	}
	k.mu.Unlock()
	<-k.done
	k.mu.Lock()
	holds := make([]*Hold, 0, len(k.held))
	for h := range k.held {
		holds = append(holds, h)
	}
	k.mu.Unlock()
	for _, h := range holds {
		h.cancel(errors.New("lease keeper closed"))
	}
}

// Context is cancelled when the lease is lost (with a cause wrapping
// store.ErrLeaseLost) or when the parent context ends.
func (h *Hold) Context() context.Context { return h.ctx }

// Lease returns the lease as last renewed.
func (h *Hold) Lease() store.Lease {
	h.k.mu.Lock()
	defer h.k.mu.Unlock()
	return h.lease
}

// Lost returns why the lease was lost, wrapping store.ErrLeaseLost, or nil.
func (h *Hold) Lost() error {
	h.k.mu.Lock()
	defer h.k.mu.Unlock()
	return h.lost
}

// Stop ends renewing this lease (the caller releases it) and returns the
// same as Lost. It cancels the Hold's context.
func (h *Hold) Stop() error {
	h.k.mu.Lock()
	delete(h.k.held, h)
	h.released = true
	lost := h.lost
	// A lease taken out makes no renewal sooner, so the loop is left
	// asleep, unless it was the last one: then the loop drops its timer
	// rather than wake once more for nothing.
	drained := len(h.k.held) == 0 && !h.k.wakeAt.IsZero()
	h.k.mu.Unlock()
	h.cancel(context.Canceled)
	if drained {
		h.k.poke()
	}
	return lost
}

// Quiesce waits until no renewal of this lease is on its way to the store,
// and starts none until Resume: the caller is about to release the lease
// (a run's finish), and a renewal sent before that release but applied
// after it would extend the lease again, holding up the job's next slot for
// a whole TTL, and come back without it, reporting a loss that is none.
// While quiet the lease is not judged expired either: the caller's own
// round trip decides. The wait is bounded by the renewal's own deadline.
func (h *Hold) Quiesce() {
	h.k.mu.Lock()
	defer h.k.mu.Unlock()
	h.quiet = true
	for h.inflight {
		h.k.idle.Wait()
	}
}

// Resume renews the lease again after Quiesce (the release did not reach
// the store): at once if a renewal fell due meanwhile.
func (h *Hold) Resume() {
	h.k.mu.Lock()
	h.quiet = false
	h.k.mu.Unlock()
	h.k.poke()
}

func (h *Hold) lose(err error) {
	h.k.mu.Lock()
	first := h.lost == nil
	if first {
		h.lost = err
	}
	delete(h.k.held, h)
	h.k.mu.Unlock()
	h.cancel(err)
	if first && h.onLost != nil && errors.Is(err, store.ErrLeaseLost) {
		h.onLost(err)
	}
}

func (k *Keeper) poke() {
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

// retryAfter is how soon a failed renewal is retried: faster than renewals,
// so a short outage is ridden out while the leases are still valid.
func retryAfter(ttl time.Duration) time.Duration { return max(ttl/30, 10*time.Millisecond) }

func (k *Keeper) run() {
	defer close(k.done)
	for {
		wait, holding := k.untilNext()
		var timer clock.Timer
		var fire <-chan time.Time
		if holding {
			timer = k.opts.Clock.NewTimer(wait)
			fire = timer.C()
		}
		select {
		case <-k.stop:
			if timer != nil {
				timer.Stop()
			}
			return
		case <-k.wake:
			if timer != nil {
				timer.Stop()
			}
			continue
		case <-fire:
		}
		k.renewDue()
	}
}

// untilNext returns how long until the earliest renewal or expiry, and
// whether any lease is held.
func (k *Keeper) untilNext() (time.Duration, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.opts.Clock.Now()
	var earliest time.Time
	for h := range k.held {
		if h.quiet {
			continue
		}
		if at := h.dueAt(); earliest.IsZero() || at.Before(earliest) {
			earliest = at
		}
	}
	k.wakeAt = earliest
	if earliest.IsZero() {
		return 0, false // nothing held, or only quiet leases: Resume pokes
	}
	return max(earliest.Sub(now), 0), true
}

// dueAt is when the lease next needs the loop: its renewal, or its
// expiry if that comes first. Callers hold k.mu.
func (h *Hold) dueAt() time.Time {
	if h.trustedUntil.Before(h.nextRenewal) {
		return h.trustedUntil
	}
	return h.nextRenewal
}

// renewDue renews, in one round trip, every lease due within a sixth of
// its TTL (so leases acquired together travel together), and gives up the
// ones whose time ran out.
func (k *Keeper) renewDue() {
	now := k.opts.Clock.Now()
	k.mu.Lock()
	var due []*Hold
	var expired []*Hold
	for h := range k.held {
		switch {
		case h.quiet:
		case !now.Before(h.trustedUntil):
			expired = append(expired, h)
		case !h.nextRenewal.After(now.Add(h.ttl / 6)):
			due = append(due, h)
		}
	}
	items := make([]store.LeaseRenewParams, len(due))
	for i, h := range due {
		items[i] = store.LeaseRenewParams{LeaseRef: h.lease.Ref(), TTL: h.ttl}
		h.inflight = true
	}
	k.mu.Unlock()

	for _, h := range expired {
		why := fmt.Sprintf("renewals failed until it expired (last error: %v)", h.lastErr)
		if h.lastErr == nil {
			// No renewal failed: none was sent in time. This process was
			// paused (stopped, a VM frozen, starved) past the lease's TTL.
			why = "it was not renewed before it expired (this process was paused or starved past its TTL)"
		}
		h.lose(fmt.Errorf("lease %q at generation %d: %s: %w", h.lease.Name, h.lease.Generation, why, store.ErrLeaseLost))
	}
	if len(due) == 0 {
		return
	}
	// A renewal that hangs must not outlive the first lease it could lose.
	deadline := due[0].trustedUntil
	for _, h := range due {
		if h.trustedUntil.Before(deadline) {
			deadline = h.trustedUntil
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline.Sub(now))
	renewed, err := k.store.LeaseRenewBatch(ctx, items)
	cancel()
	if k.opts.OnRenew != nil {
		k.opts.OnRenew(renewed, err)
	}

	byName := make(map[string]store.Lease, len(renewed))
	for _, l := range renewed {
		byName[l.Name] = l
	}
	k.mu.Lock()
	var lost []*Hold
	for _, h := range due {
		h.inflight = false
		if h.released {
			continue
		}
		if err != nil {
			h.lastErr = err
			h.nextRenewal = now.Add(retryAfter(h.ttl))
			continue
		}
		l, ok := byName[h.lease.Name]
		if !ok || l.Generation != h.lease.Generation {
			lost = append(lost, h)
			continue
		}
		h.lease, h.lastErr = l, nil
		h.trustedUntil = now.Add(h.ttl)
		h.nextRenewal = now.Add(h.ttl / 3)
	}
	k.idle.Broadcast()
	k.mu.Unlock()
	for _, h := range lost {
		h.lose(fmt.Errorf("lease %q at generation %d was taken over or expired: %w", h.lease.Name, h.lease.Generation, store.ErrLeaseLost))
	}
}
