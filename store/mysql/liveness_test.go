package mysql

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// holderConn returns the connection id holding the liveness lock of key,
// 0 when it is free.
func holderConn(t *testing.T, s *Store, key int64) int64 {
	t.Helper()
	var id *int64
	if err := s.DB().QueryRow(`SELECT IS_USED_LOCK(?)`, liveLockName(key)).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if id == nil {
		return 0
	}
	return *id
}

// TestDeadOwnersLeaseTakenOverAtOnce: a lease acquired with the owner's
// liveness key is refused to others while the owner's session lives, and
// taken over at once, long before its TTL, when that session ends (the
// process died: here its connection is killed).
func TestDeadOwnersLeaseTakenOverAtOnce(t *testing.T) {
	t.Parallel()
	s, url := migrated(t)
	// The owner's store checks its hold rarely, so it does not take the
	// lock again within the test.
	owner := openStore(t, url, &Config{LivenessCheckEvery: time.Hour})
	key, release, err := owner.LivenessHold(bg(), "replica-a")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if _, ok, err := owner.LeaseAcquire(bg(), store.LeaseAcquireParams{Name: "job:x", Owner: "replica-a", TTL: time.Hour, LiveKey: key}); err != nil || !ok {
		t.Fatalf("acquire: %v, %v", ok, err)
	}
	if l, ok, err := s.LeaseAcquire(bg(), store.LeaseAcquireParams{Name: "job:x", Owner: "replica-b", TTL: time.Hour}); err != nil || ok {
		t.Fatalf("acquire beside a live owner = %+v, %v, %v; want refused", l, ok, err)
	}
	if _, err := adminDB(t).Exec(fmt.Sprintf("KILL CONNECTION %d", holderConn(t, s, key))); err != nil {
		t.Fatal(err)
	}
	for holderConn(t, s, key) != 0 {
		time.Sleep(5 * time.Millisecond) // the server ends the session
	}
	l, ok, err := s.LeaseAcquire(bg(), store.LeaseAcquireParams{Name: "job:x", Owner: "replica-b", TTL: time.Hour})
	if err != nil || !ok || l.Generation != 2 {
		t.Fatalf("acquire after the owner died = %+v, %v, %v; want taken at generation 2", l, ok, err)
	}
	// A running slot of a dead owner is interrupted at once, too.
	p := store.SlotClaimParams{Job: "y", Slot: time.Now().Add(-time.Second), LeaseName: "job:y", Owner: "replica-a", TTL: time.Hour, MaxAttempts: 3, LiveKey: key}
	if r, err := owner.SlotClaim(bg(), p); err != nil || !r.Claimed {
		t.Fatalf("claim = %+v, %v", r, err)
	}
	interrupted, err := s.SlotListInterrupted(bg())
	if err != nil {
		t.Fatal(err)
	}
	// The claim was made while the hold was broken: it records no key and
	// waits for its TTL, rather than look dead at once.
	if len(interrupted) != 0 {
		t.Fatalf("interrupted = %+v; a claim made without a whole hold must not look dead", interrupted)
	}
}

// TestLivenessHoldTakesTheLockAgain: the hold's connection breaks while the
// process lives; the hold takes its lock again on a new connection, and
// leases acquired after that record the key again.
func TestLivenessHoldTakesTheLockAgain(t *testing.T) {
	t.Parallel()
	s, url := migrated(t)
	owner := openStore(t, url, &Config{LivenessCheckEvery: 10 * time.Millisecond})
	key, release, err := owner.LivenessHold(bg(), "replica-a")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	first := holderConn(t, s, key)
	if first == 0 {
		t.Fatal("the liveness lock is not held")
	}
	if _, err := adminDB(t).Exec(fmt.Sprintf("KILL CONNECTION %d", first)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if id := holderConn(t, s, key); id != 0 && id != first && owner.liveKeyArg(key) == key {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hold did not take its lock again (holder %d, was %d)", holderConn(t, s, key), first)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A second hold of the same owner is refused: owners are unique.
	if _, _, err := s.LivenessHold(bg(), "replica-a"); err == nil {
		t.Fatal("a second hold of one owner was granted")
	}
	release()
	if id := holderConn(t, s, key); id != 0 {
		t.Fatalf("the lock is held by connection %d after release", id)
	}
}

// TestLivenessReleaseFreesTheLockAtOnce: release frees the lock before it
// returns, even while the hold's check is in flight on its connection, so a
// contender takes the owner's leases over at once after a graceful
// shutdown. (A check cancelled mid-query made the driver drop the
// connection, and the server freed the lock only when it noticed.)
func TestLivenessReleaseFreesTheLockAtOnce(t *testing.T) {
	t.Parallel()
	s, url := migrated(t)
	// Checks back to back: release almost always meets one in flight.
	owner := openStore(t, url, &Config{LivenessCheckEvery: time.Millisecond})
	for i := range 30 {
		key, release, err := owner.LivenessHold(bg(), "replica-a")
		if err != nil {
			t.Fatalf("hold %d: %v", i, err)
		}
		time.Sleep(time.Duration(i%5) * time.Millisecond) // land release at varied points of a check
		release()
		if id := holderConn(t, s, key); id != 0 {
			t.Fatalf("hold %d: the lock is held by connection %d after release", i, id)
		}
	}
}

// TestConcurrentMigrate: replicas starting together on a new database all
// migrate at once; each succeeds, and every migration is applied once.
func TestConcurrentMigrate(t *testing.T) {
	t.Parallel()
	url := newDatabase(t)
	stores := make([]*Store, 8)
	for i := range stores {
		stores[i] = openStore(t, url, nil)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(stores))
	for i, s := range stores {
		wg.Go(func() { errs[i] = s.Migrate(bg()) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("store %d: Migrate: %v", i, err)
		}
	}
	var rows, want int
	if err := stores[0].DB().QueryRow(`SELECT count(*) FROM cronfence_schema_migrations`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	want, _ = binaryVersion()
	if rows != want {
		t.Fatalf("%d migration rows, want %d", rows, want)
	}
	if db, bin, err := stores[3].SchemaVersion(bg()); err != nil || db != bin {
		t.Fatalf("SchemaVersion = %d, %d, %v", db, bin, err)
	}
}
