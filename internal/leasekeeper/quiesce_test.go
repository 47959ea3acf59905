package leasekeeper_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// gatedRenewer is the real store behind a gate: each renewal round trip
// waits, once on its way, until the test lets it through, so a test can hold
// one in flight.
type gatedRenewer struct {
	store.Store
	sent chan struct{} // a renewal reached the gate
	gate chan struct{} // let one through
}

func (g *gatedRenewer) LeaseRenewBatch(ctx context.Context, items []store.LeaseRenewParams) ([]store.Lease, error) {
	g.sent <- struct{}{}
	<-g.gate
	return g.Store.LeaseRenewBatch(ctx, items)
}

// A run about to release its lease quiesces it first: Quiesce waits for a
// renewal already on its way (which, applied after the release, would
// extend the lease again for a TTL) and no renewal starts until Resume,
// however long the caller's release takes, nor is the lease judged expired
// meanwhile. Resume renews at once when one fell due.
func TestQuiesceWaitsForTheRenewalInFlightAndStartsNone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := &gatedRenewer{Store: b.store, sent: make(chan struct{}, 10), gate: make(chan struct{})}
	h := b.start(t, context.Background(), g)

	b.tick(t, ttl/3)
	<-g.sent // a renewal is in flight
	quiet := make(chan struct{})
	go func() { h.Quiesce(); close(quiet) }()
	select {
	case <-quiet:
		t.Fatal("Quiesce returned while a renewal was in flight")
	case <-time.After(50 * time.Millisecond):
	}
	g.gate <- struct{}{}
	if err := b.nextEvent(t); err != nil {
		t.Fatal(err)
	}
	<-quiet

	// Quiet for longer than the TTL: no renewal is sent and the work
	// context stays alive.
	b.clock.Advance(2 * ttl)
	select {
	case <-g.sent:
		t.Fatal("a quiet lease was renewed")
	case <-time.After(50 * time.Millisecond):
	}
	if err := h.Context().Err(); err != nil {
		t.Fatalf("a quiet lease was judged lost: %v", err)
	}

	// Its release did not land: renewals resume, at once since one is due.
	// The lease expired by the keeper's clock, so it is given up, not
	// renewed: the keeper cannot trust it any more.
	h.Resume()
	<-h.Context().Done()
	if err := h.Lost(); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("a lease past its TTL: Lost = %v, want ErrLeaseLost", err)
	}
}

// A lease quiesced and resumed within its TTL is renewed at once when a
// renewal fell due meanwhile, and stays trusted.
func TestResumeRenewsADueLease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.start(t, context.Background(), b.store)
	h.Quiesce()
	b.clock.Advance(ttl / 2)
	select {
	case err := <-b.events:
		t.Fatalf("a quiet lease was renewed (%v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	h.Resume()
	if err := b.nextEvent(t); err != nil {
		t.Fatalf("renewal after Resume: %v", err)
	}
	if err := h.Lost(); err != nil || h.Context().Err() != nil {
		t.Fatalf("a renewed lease: Lost = %v, context %v; want it held", err, h.Context().Err())
	}
}
