package sqlite

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/internal/sqlstore"
)

// TestNowFunc: Config.NowFunc is the store's clock wherever a call does not
// pin Now: Now itself, a claim's due check and the lease and slot it writes,
// the job state's time, a run's default times and, the part specific to this
// store (whose fence reads the clock in Go, not in SQL), LeaseFence. The
// clock is the Store's, not the file's: another Store on the file without
// NowFunc keeps the process clock.
func TestNowFunc(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var (
		mu   sync.Mutex
		fake = sqlstore.Normalize(time.Now().Add(365 * 24 * time.Hour)) // a year ahead of the process clock
	)
	read := func() time.Time { mu.Lock(); defer mu.Unlock(); return fake }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); fake = fake.Add(d) }

	path := newFile(t)
	s := openStore(t, path, &Config{NowFunc: read})
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Now(ctx); err != nil || !got.Equal(read()) {
		t.Fatalf("Now = %v, %v; want NowFunc's %v", got, err, read())
	}

	// Due by NowFunc, a year in the future by the process clock.
	start := read()
	slot := start.Add(-time.Minute)
	r, err := s.SlotClaim(ctx, store.SlotClaimParams{Job: "j", Slot: slot, LeaseName: "job:j", Owner: "A", TTL: time.Hour, MaxAttempts: 1})
	if err != nil || !r.Claimed {
		t.Fatalf("SlotClaim of a slot due by NowFunc = %+v, %v", r, err)
	}
	if !r.Lease.AcquiredAt.Equal(start) || !r.Lease.ExpiresAt.Equal(start.Add(time.Hour)) || !r.Slot.StartedAt.Equal(start) {
		t.Fatalf("claim at NowFunc's %v wrote lease %+v, slot %+v", start, r.Lease, r.Slot)
	}

	fence := func(s *Store) error {
		tx, err := s.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		return s.LeaseFence(ctx, tx, r.Lease.Name, r.Lease.Generation)
	}
	if err := fence(s); err != nil {
		t.Fatalf("fence before expiry by NowFunc: %v", err)
	}
	advance(2 * time.Hour) // past the lease's expiry by NowFunc, long before it by the process clock
	if err := fence(s); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("fence after expiry by NowFunc = %v, want ErrLeaseLost", err)
	}
	if err := fence(openStore(t, path, nil)); err != nil {
		t.Fatalf("fence by a Store on the process clock, before expiry by it: %v", err)
	}
	if _, err := s.LeaseRenew(ctx, store.LeaseRenewParams{LeaseRef: r.Lease.Ref(), TTL: time.Hour}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("LeaseRenew after expiry by NowFunc = %v, want ErrLeaseLost", err)
	}

	js, err := s.JobStateSet(ctx, store.JobStateSetParams{Job: "j", Enabled: new(false), By: "ana"})
	if err != nil || !js.OverrideAt.Equal(read()) {
		t.Fatalf("JobStateSet = %+v, %v; want it set at NowFunc's %v", js, err, read())
	}
	run, err := s.RunInsert(ctx, store.Run{Job: "j", Manual: true})
	if err != nil || !run.StartedAt.Equal(read()) || !run.FinishedAt.Equal(read()) {
		t.Fatalf("RunInsert = %+v, %v; want it started and finished at NowFunc's %v", run, err, read())
	}
}

// TestNoLivenessTakeover: this store has no liveness (see the package
// documentation). It does not implement store.Liveness, a LiveKey is
// accepted and ignored, and the lease of an owner whose process is gone is
// taken over only once it expires.
func TestNoLivenessTakeover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, path := migrated(t)
	if _, ok := any(s).(store.Liveness); ok {
		t.Fatal("the SQLite store implements store.Liveness; the package documentation says it has none")
	}
	now := s.now(time.Time{})
	p := store.SlotClaimParams{
		Job: "j", Slot: now.Add(-time.Minute), LeaseName: "job:j", Owner: "dead", TTL: time.Minute,
		MaxAttempts: 1, Now: now, LiveKey: 42,
	}
	dead, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := dead.SlotClaim(ctx, p); err != nil || !r.Claimed {
		t.Fatalf("claim with a LiveKey = %+v, %v", r, err)
	}
	if err := dead.Close(); err != nil { // its process is gone
		t.Fatal(err)
	}

	p.Slot, p.Owner, p.LiveKey, p.Now = now, "alive", 43, now.Add(time.Second)
	r, err := s.SlotClaim(ctx, p)
	if err != nil || r.Claimed || r.Refusal != store.ClaimHeld || r.Lease.Owner != "dead" || r.Recorded != store.SlotSkipped {
		t.Fatalf("claim while the dead owner's lease is unexpired = %+v, %v; want refused naming dead, slot skipped", r, err)
	}
	p.Slot, p.Now = now.Add(time.Minute), now.Add(time.Minute) // the dead owner's lease expires
	if r, err := s.SlotClaim(ctx, p); err != nil || !r.Claimed || r.Lease.Generation != 2 {
		t.Fatalf("claim once the dead owner's lease expired = %+v, %v; want claimed at generation 2", r, err)
	}
}
