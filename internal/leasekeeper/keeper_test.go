package leasekeeper_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/internal/leasekeeper"
	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const ttl = 30 * time.Second

type bundle struct {
	store  *postgres.Store
	schema string
	clock  *clock.Fake
	lease  store.Lease
	events chan error // one per renewal attempt
}

func setup(t *testing.T) *bundle {
	t.Helper()
	pool, schema := pgtest.Schema(t)
	s, err := postgres.New(pool, &postgres.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	l, ok, err := s.LeaseAcquire(context.Background(), store.LeaseAcquireParams{Name: "job", Owner: "a", TTL: ttl})
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	return &bundle{store: s, schema: schema, clock: clock.NewFake(time.Unix(1_000_000, 0)), lease: l, events: make(chan error, 100)}
}

func (b *bundle) start(t *testing.T, ctx context.Context, r leasekeeper.Renewer) *leasekeeper.Hold {
	k := leasekeeper.New(r, leasekeeper.Options{
		Clock: b.clock,
		OnRenew: func(renewed []store.Lease, err error) {
			if err == nil && len(renewed) == 0 {
				err = store.ErrLeaseLost
			}
			b.events <- err
		},
	})
	t.Cleanup(k.Close)
	h := k.Hold(ctx, b.lease, ttl, b.clock.Now())
	t.Cleanup(func() { _ = h.Stop() })
	return h
}

// tick waits until the keeper waits on its timer, then moves time by d.
func (b *bundle) tick(t *testing.T, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.clock.WaitForTimers(ctx, 1); err != nil {
		t.Fatal("the keeper never waited on its timer")
	}
	b.clock.Advance(d)
}

func (b *bundle) nextEvent(t *testing.T) error {
	t.Helper()
	select {
	case err := <-b.events:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("no renewal attempt")
		return nil
	}
}

func TestRenewsEveryThirdOfTTL(t *testing.T) {
	t.Parallel()
	b := setup(t)
	k := b.start(t, context.Background(), b.store)
	prev := b.lease.ExpiresAt
	for i := 0; i < 3; i++ {
		b.tick(t, ttl/3-time.Millisecond)
		select {
		case err := <-b.events:
			t.Fatalf("renewed before TTL/3 had passed (%v)", err)
		default:
		}
		b.clock.Advance(time.Millisecond)
		if err := b.nextEvent(t); err != nil {
			t.Fatalf("renewal %d: %v", i, err)
		}
		l, err := b.store.LeaseGet(context.Background(), "job")
		if err != nil {
			t.Fatal(err)
		}
		if !l.ExpiresAt.After(prev) || l.Generation != b.lease.Generation {
			t.Fatalf("renewal %d left the lease at %+v", i, l)
		}
		prev = l.ExpiresAt
	}
	if err := k.Context().Err(); err != nil {
		t.Fatalf("work cancelled while the lease is renewed: %v", err)
	}
	if err := k.Stop(); err != nil {
		t.Fatalf("Stop = %v, want nil for a lease still held", err)
	}
}

func TestCancelsWorkWhenTakenOver(t *testing.T) {
	t.Parallel()
	b := setup(t)
	k := b.start(t, context.Background(), b.store)
	// This process is paused past its TTL, as far as the database is
	// concerned: another replica takes the lease over.
	if _, ok, err := b.store.LeaseAcquire(context.Background(), store.LeaseAcquireParams{Name: "job", Owner: "b", TTL: ttl, Now: b.lease.ExpiresAt}); err != nil || !ok {
		t.Fatal(ok, err)
	}
	b.tick(t, ttl/3)
	if err := b.nextEvent(t); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("renewal after the takeover: %v, want ErrLeaseLost", err)
	}
	<-k.Context().Done()
	if cause := context.Cause(k.Context()); !errors.Is(cause, store.ErrLeaseLost) {
		t.Fatalf("work context cause = %v, want ErrLeaseLost", cause)
	}
	if err := k.Stop(); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("Stop = %v, want ErrLeaseLost", err)
	}
}

func TestCancelsWorkWhenRenewalsFailUntilExpiry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// A store that can no longer reach the database: every renewal fails.
	broken, err := postgres.New(pgtest.NewPool(t), &postgres.Config{Schema: b.schema})
	if err != nil {
		t.Fatal(err)
	}
	broken.Close()
	start := b.clock.Now()
	k := b.start(t, context.Background(), broken)
	failures := 0
	for k.Context().Err() == nil {
		// Wait until the keeper is waiting on its timer or has given up.
		wctx, cancel := context.WithTimeout(k.Context(), 10*time.Second)
		err := b.clock.WaitForTimers(wctx, 1)
		cancel()
		if err != nil {
			break
		}
		b.clock.Advance(time.Second)
		for drained := false; !drained; {
			select {
			case err := <-b.events:
				if !errors.Is(err, store.ErrClosed) {
					t.Fatalf("renewal error = %v, want the store's", err)
				}
				failures++
			default:
				drained = true
			}
		}
	}
	<-k.Context().Done()
	if elapsed := b.clock.Now().Sub(start); elapsed < ttl {
		t.Fatalf("work cancelled after %s of failed renewals; the lease was still valid until %s", elapsed, ttl)
	}
	if failures < 2 {
		t.Fatalf("only %d renewal attempts before giving up; want retries", failures)
	}
	if cause := context.Cause(k.Context()); !errors.Is(cause, store.ErrLeaseLost) {
		t.Fatalf("cause = %v, want ErrLeaseLost", cause)
	}
}

// flaky fails its first n renewals, then passes them to the real store: an
// outage that ends while the lease is still valid.
type flaky struct {
	leasekeeper.Renewer
	n atomic.Int32
}

func (f *flaky) LeaseRenewBatch(ctx context.Context, items []store.LeaseRenewParams) ([]store.Lease, error) {
	if f.n.Add(-1) >= 0 {
		return nil, errors.New("connection refused")
	}
	return f.Renewer.LeaseRenewBatch(ctx, items)
}

func TestRidesOutShortOutage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := &flaky{Renewer: b.store}
	f.n.Store(3)
	k := b.start(t, context.Background(), f)
	b.tick(t, ttl/3)
	for i := 0; i < 3; i++ {
		if err := b.nextEvent(t); err == nil {
			t.Fatalf("attempt %d succeeded during the outage", i)
		}
		b.tick(t, ttl/30)
	}
	if err := b.nextEvent(t); err != nil {
		t.Fatalf("renewal after the outage: %v", err)
	}
	if err := k.Context().Err(); err != nil {
		t.Fatalf("work cancelled by an outage shorter than the TTL: %v", err)
	}
}

func TestParentCancelEndsWorkWithoutLoss(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	k := b.start(t, ctx, b.store)
	cancel()
	<-k.Context().Done()
	if err := k.Stop(); err != nil {
		t.Fatalf("Stop after the parent ended = %v, want nil", err)
	}
}

// Several leases held by one replica are renewed in one round trip, and
// losing one cancels only its own work.
func TestBatchRenewalLosesOnlyTheStolenLease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var batches []int
	events := make(chan struct{}, 10)
	k := leasekeeper.New(b.store, leasekeeper.Options{Clock: b.clock, OnRenew: func(renewed []store.Lease, err error) {
		if err != nil {
			t.Errorf("batch renewal: %v", err)
		}
		batches = append(batches, len(renewed))
		events <- struct{}{}
	}})
	defer k.Close()
	var holds []*leasekeeper.Hold
	for _, name := range []string{"a", "b", "c"} {
		l, ok, err := b.store.LeaseAcquire(context.Background(), store.LeaseAcquireParams{Name: name, Owner: "a", TTL: ttl})
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		h := k.Hold(context.Background(), l, ttl, b.clock.Now())
		defer h.Stop()
		holds = append(holds, h)
	}
	// "b" is taken over while this replica is paused.
	if _, ok, err := b.store.LeaseAcquire(context.Background(), store.LeaseAcquireParams{Name: "b", Owner: "z", TTL: ttl, Now: holds[1].Lease().ExpiresAt}); err != nil || !ok {
		t.Fatal(ok, err)
	}
	b.tick(t, ttl/3)
	<-events
	<-holds[1].Context().Done()
	if err := holds[1].Lost(); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("stolen lease: Lost = %v", err)
	}
	for _, i := range []int{0, 2} {
		if err := holds[i].Context().Err(); err != nil {
			t.Fatalf("lease %d cancelled: %v", i, err)
		}
	}
	if len(batches) != 1 || batches[0] != 2 {
		t.Fatalf("renewal round trips renewed %v, want one round trip renewing 2", batches)
	}
}

// HoldFunc tells its caller once, and only of a real loss: a takeover, not
// Stop, Close or the parent's end.
func TestHoldFuncReportsOnlyALoss(t *testing.T) {
	t.Parallel()
	b := setup(t)
	k := leasekeeper.New(b.store, leasekeeper.Options{Clock: b.clock})
	lost := make(chan error, 10)
	hold := func(name string, ctx context.Context) *leasekeeper.Hold {
		l, ok, err := b.store.LeaseAcquire(context.Background(), store.LeaseAcquireParams{Name: name, Owner: "a", TTL: ttl})
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		return k.HoldFunc(ctx, l, ttl, b.clock.Now(), func(err error) { lost <- fmt.Errorf("%s: %w", name, err) })
	}
	stolen := hold("stolen", context.Background())
	stopped := hold("stopped", context.Background())
	parent, cancel := context.WithCancel(context.Background())
	ended := hold("ended", parent)
	closed := hold("closed", context.Background())
	if _, ok, err := b.store.LeaseAcquire(context.Background(), store.LeaseAcquireParams{Name: "stolen", Owner: "z", TTL: ttl, Now: stolen.Lease().ExpiresAt}); err != nil || !ok {
		t.Fatal(ok, err)
	}
	_ = stopped.Stop()
	cancel()
	<-ended.Context().Done()
	b.tick(t, ttl/3)
	<-stolen.Context().Done()
	select {
	case err := <-lost:
		if !errors.Is(err, store.ErrLeaseLost) || !strings.HasPrefix(err.Error(), "stolen: ") {
			t.Fatalf("onLost got %v, want the stolen lease's ErrLeaseLost", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("onLost was not called for the stolen lease")
	}
	_ = stolen.Stop()
	_ = ended.Stop()
	k.Close()
	<-closed.Context().Done()
	if len(lost) != 0 {
		t.Fatalf("onLost called again: %v", <-lost)
	}
}

// A process frozen past its lease's TTL (stopped, a VM paused) wakes to a
// lease no renewal was tried for: the loss says so, rather than blaming
// renewals that failed "(last error: <nil>)".
func TestAFreezePastTheTTLSaysNoRenewalWasTried(t *testing.T) {
	t.Parallel()
	b := setup(t)
	k := b.start(t, context.Background(), b.store)
	b.tick(t, ttl+time.Second) // the timer of the first renewal fires a TTL late
	<-k.Context().Done()
	cause := context.Cause(k.Context())
	if !errors.Is(cause, store.ErrLeaseLost) || !strings.Contains(cause.Error(), "not renewed before it expired") ||
		strings.Contains(cause.Error(), "<nil>") || strings.Contains(cause.Error(), "renewals failed") {
		t.Fatalf("cause = %v; want a loss saying no renewal was made in time", cause)
	}
	select {
	case err := <-b.events:
		t.Fatalf("a renewal was tried after the lease expired (%v)", err)
	default:
	}
}
