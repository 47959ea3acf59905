package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
)

// When the owner's process dies its liveness session ends with it, and the
// slot it was running can be resumed at once instead of after the TTL.
func TestLivenessTakeoverBeforeTTL(t *testing.T) {
	t.Parallel()
	s, schema := newStore(t)
	other := openOn(t, schema)
	key, release, err := s.LivenessHold(ctx(t), "replica-a")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if _, _, err := other.LivenessHold(ctx(t), "replica-a"); err == nil {
		t.Fatal("a second liveness hold for the same owner succeeded")
	}
	claim := reportClaimer(t, s)
	a := claim(s, "replica-a", key)
	if !a.Claimed {
		t.Fatalf("first claim refused: %+v", a)
	}
	// A is alive: B must wait.
	if r := claim(other, "replica-b", 0); r.Claimed || r.Refusal != store.ClaimHeld {
		t.Fatalf("claim while the owner lives = %+v, want held", r)
	}
	// The process dies: the server ends its session, and the lock goes
	// with it. (pg_terminate_backend with a timeout waits for the end.)
	terminateLiveness(t, other, key)
	r := claim(other, "replica-b", 0)
	if !r.Claimed || r.Slot.Attempts != 2 || r.Lease.Generation != a.Lease.Generation+1 {
		t.Fatalf("claim after the owner died = %+v; want attempt 2 at the next generation, long before the hour's TTL", r)
	}
	// The dead owner's renewal now affects no row.
	if _, err := s.LeaseRenew(ctx(t), store.LeaseRenewParams{LeaseRef: a.Lease.Ref(), TTL: time.Hour}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("renewal by the replaced owner: %v, want ErrLeaseLost", err)
	}
}

// A lease taken without a liveness key is never taken over before expiry,
// even though no liveness lock exists for its owner.
func TestNoLivenessKeyMeansTTLRules(t *testing.T) {
	t.Parallel()
	s, schema := newStore(t)
	if _, ok, err := s.LeaseAcquire(ctx(t), store.LeaseAcquireParams{Name: "x", Owner: "a", TTL: time.Hour}); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, ok, err := openOn(t, schema).LeaseAcquire(ctx(t), store.LeaseAcquireParams{Name: "x", Owner: "b", TTL: time.Hour}); err != nil || ok {
		t.Fatalf("takeover of a live lease without a liveness key: ok %v, %v", ok, err)
	}
}

// NowFunc moves the store's clock for tests, fences included.
func TestNowFuncPinsEveryClock(t *testing.T) {
	t.Parallel()
	_, schema := newStore(t)
	fake := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := postgres.New(openOn(t, schema).Pool(), &postgres.Config{Schema: schema, NowFunc: func() time.Time { return fake }})
	if err != nil {
		t.Fatal(err)
	}
	if now, _ := s.Now(ctx(t)); !now.Equal(fake) {
		t.Fatalf("Now = %s, want %s", now, fake)
	}
	l, ok, err := s.LeaseAcquire(ctx(t), store.LeaseAcquireParams{Name: "x", Owner: "a", TTL: time.Minute})
	if err != nil || !ok || !l.AcquiredAt.Equal(fake) {
		t.Fatalf("acquire = %+v, %v, %v; want acquired at %s", l, ok, err, fake)
	}
	// By the real clock this lease expires in 2030, by the pinned one in a
	// minute; a fence at the pinned clock a minute later must refuse.
	fake = fake.Add(time.Minute)
	tx, err := s.Pool().Begin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx(t))
	if err := s.LeaseFence(ctx(t), tx, "x", l.Generation); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("fence at the pinned expiry: %v, want ErrLeaseLost", err)
	}
}

// LeaseAcquire with a liveness key (a manual run, a retention pass) is
// taken over as soon as its owner's liveness lock is free.
func TestLeaseAcquireWithLiveKey(t *testing.T) {
	t.Parallel()
	s, schema := newStore(t)
	other := openOn(t, schema)
	key, release, err := s.LivenessHold(ctx(t), "replica-a")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if _, ok, err := s.LeaseAcquire(ctx(t), store.LeaseAcquireParams{Name: "job:x", Owner: "replica-a", TTL: time.Hour, LiveKey: key}); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, ok, err := other.LeaseAcquire(ctx(t), store.LeaseAcquireParams{Name: "job:x", Owner: "replica-b", TTL: time.Hour}); err != nil || ok {
		t.Fatalf("takeover while the owner lives: %v, %v", ok, err)
	}
	release()
	l, ok, err := other.LeaseAcquire(ctx(t), store.LeaseAcquireParams{Name: "job:x", Owner: "replica-b", TTL: time.Hour})
	if err != nil || !ok || l.Generation != 2 {
		t.Fatalf("takeover after the owner's liveness lock went = %+v, %v, %v", l, ok, err)
	}
}

// A liveness connection that breaks while its process lives (a network
// cut, a database restart, a terminated backend) is noticed and the lock
// taken again on a new connection: otherwise every later claim of this
// owner would look like a dead owner's and be taken over at once.
func TestLivenessRetakenAfterItsConnectionBreaks(t *testing.T) {
	t.Parallel()
	s, schema := newStoreWith(t, postgres.Config{LivenessCheckEvery: 20 * time.Millisecond})
	other := openOn(t, schema)
	key, release, err := s.LivenessHold(ctx(t), "replica-a")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	// holder returns the backend pid holding the liveness lock, 0 if none.
	holder := func() int {
		t.Helper()
		var pid int
		err := other.Pool().QueryRow(ctx(t), `
			SELECT coalesce(max(pid), 0) FROM pg_locks
			 WHERE locktype = 'advisory' AND objsubid = 1 AND granted
			   AND ((classid::bigint << 32) | objid::bigint) = ($1::bigint & x'ffffffffffffffff'::bigint)`, key).Scan(&pid)
		if err != nil {
			t.Fatal(err)
		}
		return pid
	}
	first := holder()
	if first == 0 {
		t.Fatal("the liveness lock is not held after LivenessHold")
	}
	var terminated bool
	if err := other.Pool().QueryRow(ctx(t), `SELECT pg_terminate_backend($1, 10000)`, first).Scan(&terminated); err != nil || !terminated {
		t.Fatalf("terminating the liveness session: %v, %v", terminated, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if pid := holder(); pid != 0 && pid != first {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the liveness lock was not taken again within 10s of its session's end")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Held again: another session cannot take it.
	var locked bool
	if err := other.Pool().QueryRow(ctx(t), `SELECT pg_try_advisory_lock($1)`, key).Scan(&locked); err != nil || locked {
		t.Fatalf("pg_try_advisory_lock by another session = %v, %v; want false (held again by the owner)", locked, err)
	}
	// release frees it.
	release()
	if pid := holder(); pid != 0 {
		t.Fatalf("after release the liveness lock is still held by pid %d", pid)
	}
}

// Leases acquired or claimed after the owner's liveness connection broke,
// before the lock is taken again, record no live key: no session holds it,
// so with the key they would look like a dead owner's and be taken over at
// once (after a database restart every replica is in that state at once,
// and each taker's claims were taken over in turn). Without it they wait
// for their TTL. The lock is not taken again during the test (an hour
// between tries); the break is noticed without any claim or poll.
func TestLivenessBreakRecordsNoKeyUntilRetaken(t *testing.T) {
	t.Parallel()
	s, schema := newStoreWith(t, postgres.Config{LivenessCheckEvery: time.Hour})
	other := openOn(t, schema)
	key, release, err := s.LivenessHold(ctx(t), "replica-a")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if !s.LiveKeyHeld(key) {
		t.Fatal("the liveness lock is not held after LivenessHold")
	}
	terminateLiveness(t, other, key)
	deadline := time.Now().Add(10 * time.Second)
	for s.LiveKeyHeld(key) {
		if time.Now().After(deadline) {
			t.Fatal("the end of the liveness session was not noticed within 10s")
		}
		time.Sleep(time.Millisecond)
	}

	claim := reportClaimer(t, s)
	if a := claim(s, "replica-a", key); !a.Claimed {
		t.Fatalf("claim by the live owner refused: %+v", a)
	}
	if r := claim(other, "replica-b", 0); r.Claimed || r.Refusal != store.ClaimHeld {
		t.Fatalf("claim of a live owner's slot after its liveness connection broke = %+v, want held until the TTL", r)
	}
	if _, ok, err := s.LeaseAcquire(ctx(t), store.LeaseAcquireParams{Name: "lock:x", Owner: "replica-a", TTL: time.Hour, LiveKey: key}); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, ok, err := other.LeaseAcquire(ctx(t), store.LeaseAcquireParams{Name: "lock:x", Owner: "replica-b", TTL: time.Hour}); err != nil || ok {
		t.Fatalf("takeover of a live owner's lease after its liveness connection broke: %v, %v", ok, err)
	}
}

// terminateLiveness ends, through another store's connection, the session
// holding the liveness lock key, and waits for its end.
func terminateLiveness(t *testing.T, via *postgres.Store, key int64) {
	t.Helper()
	var terminated bool
	err := via.Pool().QueryRow(ctx(t), `
		SELECT pg_terminate_backend(pid, 10000) FROM pg_locks
		 WHERE locktype = 'advisory' AND objsubid = 1
		   AND ((classid::bigint << 32) | objid::bigint) = ($1::bigint & x'ffffffffffffffff'::bigint)`, key).Scan(&terminated)
	if err != nil || !terminated {
		t.Fatalf("terminating the liveness session: %v, %v", terminated, err)
	}
}

// reportClaimer returns a claim of job "report"'s slot of a second ago (by
// s's clock), with a TTL of an hour, by owner through st.
func reportClaimer(t *testing.T, s *postgres.Store) func(st *postgres.Store, owner string, live int64) store.SlotClaimResult {
	now, err := s.Now(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	return func(st *postgres.Store, owner string, live int64) store.SlotClaimResult {
		t.Helper()
		r, err := st.SlotClaim(ctx(t), store.SlotClaimParams{
			Job: "report", Slot: now.Add(-time.Second), LeaseName: "job:report", Owner: owner,
			TTL: time.Hour, MaxAttempts: 3, LiveKey: live,
		})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
}
