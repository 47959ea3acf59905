package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cronfence/cronfence/store"
)

const ttl = 10 * time.Second

var leaseTests = []namedTest{
	{name: "AcquireFresh", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		l := mustAcquire(t, b.Store, store.LeaseAcquireParams{Name: "daily-close", Owner: "a", TTL: ttl, Now: now})
		want := store.Lease{Name: "daily-close", Owner: "a", Generation: 1, AcquiredAt: now, RenewedAt: now, ExpiresAt: now.Add(ttl)}
		if diff := cmp.Diff(want, l); diff != "" {
			t.Fatalf("acquired lease (-want +got):\n%s", diff)
		}
		got, err := b.Store.LeaseGet(ctx(t), "daily-close")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("LeaseGet (-want +got):\n%s", diff)
		}
	}},
	{name: "HeldByAnotherReturnsHolder", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		a := mustAcquire(t, b.Store, store.LeaseAcquireParams{Name: "x", Owner: "a", TTL: ttl, Now: now})
		holder, ok, err := b.Store.LeaseAcquire(ctx(t), store.LeaseAcquireParams{Name: "x", Owner: "b", TTL: ttl, Now: now.Add(ttl - time.Microsecond)})
		if err != nil || ok {
			t.Fatalf("second acquire = ok %v, err %v; want refused", ok, err)
		}
		if diff := cmp.Diff(a, holder); diff != "" {
			t.Fatalf("holder (-want +got):\n%s", diff)
		}
	}},
	{name: "NotReentrant", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		mustAcquire(t, b.Store, store.LeaseAcquireParams{Name: "x", Owner: "a", TTL: ttl, Now: now})
		if _, ok, err := b.Store.LeaseAcquire(ctx(t), store.LeaseAcquireParams{Name: "x", Owner: "a", TTL: ttl, Now: now}); ok || err != nil {
			t.Fatalf("same owner re-acquired a held lease: ok %v, err %v", ok, err)
		}
	}},
	{name: "TakeoverAtExpiry", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		mustAcquire(t, b.Store, store.LeaseAcquireParams{Name: "x", Owner: "a", TTL: ttl, Now: now})
		// Expiry is exclusive for the holder: at expires_at the lease is free.
		l := mustAcquire(t, b.Store, store.LeaseAcquireParams{Name: "x", Owner: "b", TTL: ttl, Now: now.Add(ttl)})
		if l.Generation != 2 || l.Owner != "b" || !l.ExpiresAt.Equal(now.Add(2*ttl)) {
			t.Fatalf("takeover = %+v, want owner b, generation 2, expiring at %s", l, now.Add(2*ttl))
		}
	}},
	{name: "GenerationSurvivesRelease", fn: func(t *testing.T, b Bundle) {
		var last int64
		for i := 0; i < 5; i++ {
			l := mustAcquire(t, b.Store, store.LeaseAcquireParams{Name: "x", Owner: "a", TTL: ttl})
			if l.Generation <= last {
				t.Fatalf("generation went from %d to %d after a release", last, l.Generation)
			}
			last = l.Generation
			released, err := b.Store.LeaseRelease(ctx(t), l.Ref())
			if err != nil || !released {
				t.Fatalf("release = %v, %v; want released", released, err)
			}
			got, err := b.Store.LeaseGet(ctx(t), "x")
			if err != nil {
				t.Fatal(err)
			}
			if got.Generation != l.Generation || got.ExpiresAt.After(dbNow(t, b.Store)) {
				t.Fatalf("after release the row is %+v; want generation %d kept and expired", got, l.Generation)
			}
		}
		if last != 5 {
			t.Fatalf("five acquisitions reached generation %d, want 5", last)
		}
	}},
	{name: "RenewExtendsFromNow", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		l := mustAcquire(t, b.Store, store.LeaseAcquireParams{Name: "x", Owner: "a", TTL: ttl, Now: now})
		later := now.Add(3 * time.Second)
		r, err := b.Store.LeaseRenew(ctx(t), store.LeaseRenewParams{LeaseRef: l.Ref(), TTL: 2 * ttl, Now: later})
		if err != nil {
			t.Fatal(err)
		}
		want := l
		want.RenewedAt, want.ExpiresAt = later, later.Add(2*ttl)
		if diff := cmp.Diff(want, r); diff != "" {
			t.Fatalf("renewed lease (-want +got):\n%s", diff)
		}
	}},
	{name: "RenewRefusedWhenLost", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		l := mustAcquire(t, b.Store, store.LeaseAcquireParams{Name: "x", Owner: "a", TTL: ttl, Now: now})
		for _, tc := range []struct {
			name string
			p    store.LeaseRenewParams
		}{
			{"expired", store.LeaseRenewParams{LeaseRef: l.Ref(), TTL: ttl, Now: now.Add(ttl)}},
			{"other owner", store.LeaseRenewParams{LeaseRef: store.LeaseRef{Name: "x", Owner: "b", Generation: 1}, TTL: ttl, Now: now}},
			{"other generation", store.LeaseRenewParams{LeaseRef: store.LeaseRef{Name: "x", Owner: "a", Generation: 2}, TTL: ttl, Now: now}},
			{"no such lease", store.LeaseRenewParams{LeaseRef: store.LeaseRef{Name: "y", Owner: "a", Generation: 1}, TTL: ttl, Now: now}},
		} {
			_, err := b.Store.LeaseRenew(ctx(t), tc.p)
			wantErrIs(t, "renew, "+tc.name, err, store.ErrLeaseLost)
		}
		got, err := b.Store.LeaseGet(ctx(t), "x")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(l, got); diff != "" {
			t.Fatalf("refused renewals changed the lease (-want +got):\n%s", diff)
		}
	}},
	{name: "ReleaseOnlyOwnGeneration", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		a := mustAcquire(t, b.Store, store.LeaseAcquireParams{Name: "x", Owner: "a", TTL: ttl, Now: now.Add(-2 * ttl)})
		bl := mustAcquire(t, b.Store, store.LeaseAcquireParams{Name: "x", Owner: "b", TTL: ttl, Now: now})
		released, err := b.Store.LeaseRelease(ctx(t), a.Ref())
		if err != nil || released {
			t.Fatalf("stale release = %v, %v; want false, nil", released, err)
		}
		got, err := b.Store.LeaseGet(ctx(t), "x")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(bl, got); diff != "" {
			t.Fatalf("a stale release touched the new holder's lease (-want +got):\n%s", diff)
		}
	}},
	{name: "GetMissing", fn: func(t *testing.T, b Bundle) {
		wantNotFoundLease(t, b.Store, "never")
	}},
	{name: "Now", fn: func(t *testing.T, b Bundle) {
		first := dbNow(t, b.Store)
		second := dbNow(t, b.Store)
		if second.Before(first) {
			t.Fatalf("the database clock went back: %s then %s", first, second)
		}
	}},
	{name: "SchemaVersionCurrent", fn: func(t *testing.T, b Bundle) {
		db, bin, err := b.Store.SchemaVersion(ctx(t))
		if err != nil || db != bin || bin < 1 {
			t.Fatalf("SchemaVersion = %d, %d, %v; want equal versions of at least 1", db, bin, err)
		}
		if err := b.Store.Migrate(ctx(t)); err != nil {
			t.Fatalf("a second Migrate: %v", err)
		}
		if db2, _, _ := b.Store.SchemaVersion(ctx(t)); db2 != db {
			t.Fatalf("a second Migrate moved the version from %d to %d", db, db2)
		}
	}},
	{name: "SeedTimeline", fn: seedTimeline},
}

// seedTimeline is the timeline of the design seed: A takes the lease, stops
// renewing (a GC pause, a throttled CPU), the lease expires, B takes it at
// generation + 1, and A wakes up. Every one of A's moves must now fail
// without harming B.
func seedTimeline(t *testing.T, b Bundle) {
	s := b.Store
	other := b.Open(t)
	t0 := dbNow(t, s)
	a := mustAcquire(t, s, store.LeaseAcquireParams{Name: "fechamento-diario", Owner: "replica-a", TTL: ttl, Now: t0})
	if err := b.FencedWrite(ctx(t), a.Name, a.Generation, "a-before-pause"); err != nil {
		t.Fatalf("A's fenced write while holding the lease: %v", err)
	}

	// A pauses past its TTL; B takes over.
	bl := mustAcquire(t, other, store.LeaseAcquireParams{Name: "fechamento-diario", Owner: "replica-b", TTL: ttl, Now: t0.Add(ttl + time.Second)})
	if bl.Generation != a.Generation+1 {
		t.Fatalf("B's generation = %d, want %d", bl.Generation, a.Generation+1)
	}

	// A wakes up.
	_, err := s.LeaseRenew(ctx(t), store.LeaseRenewParams{LeaseRef: a.Ref(), TTL: ttl})
	wantErrIs(t, "A's renewal after waking", err, store.ErrLeaseLost)
	err = b.FencedWrite(ctx(t), a.Name, a.Generation, "a-after-pause")
	wantErrIs(t, "A's fenced write after waking", err, store.ErrLeaseLost)
	if b.Written(ctx(t), "a-after-pause") {
		t.Fatal("A's write after losing the lease was committed")
	}
	if released, err := s.LeaseRelease(ctx(t), a.Ref()); err != nil || released {
		t.Fatalf("A's release = %v, %v; want false, nil", released, err)
	}
	got, err := s.LeaseGet(ctx(t), "fechamento-diario")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(bl, got); diff != "" {
		t.Fatalf("A touched B's lease (-want +got):\n%s", diff)
	}
	if err := b.FencedWrite(ctx(t), bl.Name, bl.Generation, "b"); err != nil {
		t.Fatalf("B's fenced write: %v", err)
	}
	if !b.Written(ctx(t), "a-before-pause") || !b.Written(ctx(t), "b") {
		t.Fatal("a fenced write made under a held lease was not committed")
	}
}

var fenceTests = []namedTest{
	{name: "PassesWhileHeld", fn: func(t *testing.T, b Bundle) {
		l := mustAcquire(t, b.Store, store.LeaseAcquireParams{Name: "x", Owner: "a", TTL: ttl})
		if err := b.FencedWrite(ctx(t), "x", l.Generation, "k"); err != nil {
			t.Fatal(err)
		}
		if !b.Written(ctx(t), "k") {
			t.Fatal("fenced write not committed")
		}
	}},
	{name: "RefusesExpired", fn: func(t *testing.T, b Bundle) {
		// Acquired an hour ago by the database clock: long expired now.
		l := mustAcquire(t, b.Store, store.LeaseAcquireParams{Name: "x", Owner: "a", TTL: ttl, Now: dbNow(t, b.Store).Add(-time.Hour)})
		err := b.FencedWrite(ctx(t), "x", l.Generation, "k")
		wantErrIs(t, "fence on an expired lease", err, store.ErrLeaseLost)
		if b.Written(ctx(t), "k") {
			t.Fatal("a write fenced by an expired lease was committed")
		}
	}},
	{name: "RefusesReleased", fn: func(t *testing.T, b Bundle) {
		l := mustAcquire(t, b.Store, store.LeaseAcquireParams{Name: "x", Owner: "a", TTL: ttl})
		if _, err := b.Store.LeaseRelease(ctx(t), l.Ref()); err != nil {
			t.Fatal(err)
		}
		wantErrIs(t, "fence on a released lease", b.FencedWrite(ctx(t), "x", l.Generation, "k"), store.ErrLeaseLost)
	}},
	{name: "RefusesUnknown", fn: func(t *testing.T, b Bundle) {
		wantErrIs(t, "fence on a lease never taken", b.FencedWrite(ctx(t), "nope", 1, "k"), store.ErrLeaseLost)
	}},
	{name: "UnsupportedTx", fn: func(t *testing.T, b Bundle) {
		err := b.Store.LeaseFence(ctx(t), struct{}{}, "x", 1)
		wantErrIs(t, "fence with a struct{} transaction", err, store.ErrUnsupportedTx)
	}},
}
