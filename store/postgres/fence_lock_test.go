package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cronfence/cronfence/internal/wait"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
)

// A handler's fenced transaction may stay open for as long as its run
// lasts. Its replica must go on renewing every lease it holds meanwhile,
// that one included (one batch renews them all), while a takeover of the
// fenced lease is still held off until the commit, also after those
// renewals (the lock is carried over to the row's new version).
// Both fences, LeaseFence and the SQL function fence(), behave alike.
func TestFenceLetsItsOwnerRenewButNotATakeover(t *testing.T) {
	t.Parallel()
	for _, fence := range []struct {
		name string
		fn   func(s *postgres.Store, schema string, tx pgx.Tx, l store.Lease) error
	}{
		{"LeaseFence", func(s *postgres.Store, _ string, tx pgx.Tx, l store.Lease) error {
			return s.LeaseFence(ctx(t), tx, l.Name, l.Generation)
		}},
		{"SQL fence()", func(_ *postgres.Store, schema string, tx pgx.Tx, l store.Lease) error {
			_, err := tx.Exec(ctx(t), `SELECT `+pgx.Identifier{schema, "fence"}.Sanitize()+`($1, $2)`, l.Name, l.Generation)
			return err
		}},
	} {
		t.Run(fence.name, func(t *testing.T) {
			t.Parallel()
			testFenceLetsItsOwnerRenew(t, fence.fn)
		})
	}
}

func testFenceLetsItsOwnerRenew(t *testing.T, fence func(s *postgres.Store, schema string, tx pgx.Tx, l store.Lease) error) {
	s, schema := newStore(t)
	other := openOn(t, schema)
	var held []store.Lease
	for _, name := range []string{"job:fenced", "job:other"} {
		l, ok, err := s.LeaseAcquire(ctx(t), store.LeaseAcquireParams{Name: name, Owner: "a", TTL: time.Minute})
		if err != nil || !ok {
			t.Fatal(name, ok, err)
		}
		held = append(held, l)
	}
	tx, err := s.Pool().Begin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if err := fence(s, schema, tx, held[0]); err != nil {
		t.Fatal(err)
	}

	err = awaitWithoutLockWait(t, s.Pool(), schema, func() error {
		items := []store.LeaseRenewParams{{LeaseRef: held[0].Ref(), TTL: time.Minute}, {LeaseRef: held[1].Ref(), TTL: time.Minute}}
		ls, err := s.LeaseRenewBatch(ctx(t), items)
		if err == nil && len(ls) != 2 {
			t.Errorf("renewed %d of 2 leases: %+v", len(ls), ls)
		}
		return err
	})
	if err != nil {
		t.Fatalf("renewal during the fenced transaction: %v", err)
	}

	now, err := s.Now(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	takeover := store.LeaseAcquireParams{Name: "job:fenced", Owner: "b", TTL: time.Minute, Now: now.Add(time.Hour)}
	if r := awaitWithoutLockWait(t, s.Pool(), schema, func() acquired { return tryAcquire(t, other, takeover) }); r.err != nil || r.ok || r.lease.Owner != "a" {
		t.Fatalf("a takeover after the owner renewed, during the fenced transaction = %+v; want turned down", r)
	}
	if err := tx.Commit(ctx(t)); err != nil {
		t.Fatal(err)
	}
	l, ok, err := other.LeaseAcquire(ctx(t), takeover)
	if err != nil || !ok || l.Generation != held[0].Generation+1 {
		t.Fatalf("takeover after the commit = %+v, %v, %v", l, ok, err)
	}
}

// The next slot of a job whose run holds its lease, fenced in an open
// transaction, is refused as overlapping at once: the claim reads the lease
// as held and leaves its row alone, rather than wait on the row lock until
// the handler commits. The claim shares a batch with every other job due at
// that instant, so waiting stalled every job on every replica.
func TestClaimOfAFencedLeaseDoesNotWait(t *testing.T) {
	t.Parallel()
	s, schema := newStore(t)
	other := openOn(t, schema)
	now, err := s.Now(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	slot := now.Add(-2 * time.Second).Truncate(time.Second)
	claim := func(slot time.Time, owner, job string) store.SlotClaimParams {
		return store.SlotClaimParams{Job: job, Slot: slot, LeaseName: "job:" + job, Owner: owner, TTL: time.Minute, MaxAttempts: 3}
	}
	// Claimed on time: the run holds the lease from the slot's instant, so
	// the next slot overlaps it.
	onTime := claim(slot, "a", "report")
	onTime.Now = slot
	first, err := s.SlotClaim(ctx(t), onTime)
	if err != nil || !first.Claimed {
		t.Fatalf("first claim = %+v, %v", first, err)
	}
	tx, err := s.Pool().Begin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if err := s.LeaseFence(ctx(t), tx, first.Lease.Name, first.Lease.Generation); err != nil {
		t.Fatal(err)
	}

	r := awaitWithoutLockWait(t, s.Pool(), schema, func() claimed {
		return claimBatch(t, other, claim(slot.Add(time.Second), "b", "report"), claim(slot.Add(time.Second), "b", "billing"))
	})
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got := r.rs[0]; got.Claimed || got.Recorded != store.SlotSkipped || got.Lease.Owner != "a" || got.Lease.Generation != first.Lease.Generation {
		t.Errorf("next slot of the fenced job = %+v; want skipped, naming a's lease", got)
	}
	if !r.rs[1].Claimed {
		t.Errorf("the other job in the batch = %+v; want claimed", r.rs[1])
	}
	if err := tx.Commit(ctx(t)); err != nil {
		t.Fatal(err)
	}
}

// awaitWithoutLockWait runs call in a goroutine and returns what it
// returns; it fails the test as soon as a statement on schema's tables
// waits on a lock a session holds instead (the server reports it in
// pg_stat_activity), so no timer decides whether the statement "waited too
// long". A wait whose holders are already gone when it is seen (an
// "object" lock of a catalog entry another test's schema drop or
// migration held for an instant) is not one: the locks these tests are
// about are held by a transaction the test keeps open until call returns.
func awaitWithoutLockWait[T any](t *testing.T, pool *pgxpool.Pool, schema string, call func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- call() }()
	var v T
	wait.For(t, wait.Forever, func() bool {
		select {
		case v = <-done:
			return true
		default:
		}
		var waiting string
		err := pool.QueryRow(ctx(t), `
			SELECT coalesce(string_agg(format('%s waits on a %s lock held by: %s', left(w.query, 300), w.wait_event,
			                                  (SELECT string_agg(format('[%s] %s', h.state, left(h.query, 300)), '; ')
			                                     FROM pg_stat_activity h WHERE h.pid = ANY (pg_blocking_pids(w.pid)))),
			                           ' | '), '')
			  FROM pg_stat_activity w
			 WHERE w.datname = current_database() AND w.wait_event_type = 'Lock'
			   AND strpos(w.query, $1) > 0 AND cardinality(pg_blocking_pids(w.pid)) > 0`, schema).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting != "" {
			t.Fatalf("a statement waits on a lock (the fenced transaction's, or another's): %s", waiting)
		}
		return false
	}, func() string {
		return "the call did not return"
	})
	return v
}

// acquired is what LeaseAcquire returned.
type acquired struct {
	lease store.Lease
	ok    bool
	err   error
}

func tryAcquire(t *testing.T, s store.Store, p store.LeaseAcquireParams) acquired {
	l, ok, err := s.LeaseAcquire(ctx(t), p)
	return acquired{l, ok, err}
}

// claimed is what SlotClaimBatch returned.
type claimed struct {
	rs  []store.SlotClaimResult
	err error
}

func claimBatch(t *testing.T, s store.Store, items ...store.SlotClaimParams) claimed {
	rs, err := s.SlotClaimBatch(ctx(t), items)
	return claimed{rs, err}
}

// A deposed writer (its lease expired while it was frozen inside its fenced
// transaction) still holds the lease row. The takeover must wait for that
// transaction, but the batch must not: the claim of that lease is refused
// lease_busy at once and writes nothing, the batch's other job is claimed,
// and once the transaction ends the slot is claimed under the next
// generation.
func TestClaimOfADeposedWritersLeaseIsBusyNotWaited(t *testing.T) {
	t.Parallel()
	s, schema := newStore(t)
	other := openOn(t, schema)
	now, err := s.Now(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	slot := now.Add(-time.Minute).Truncate(time.Second)
	claim := func(slot time.Time, owner, job string, at time.Time) store.SlotClaimParams {
		return store.SlotClaimParams{Job: job, Slot: slot, LeaseName: "job:" + job, Owner: owner, TTL: 10 * time.Second, MaxAttempts: 3, Now: at}
	}
	// a's claim, a minute ago: its lease expired 50 s ago.
	first, err := s.SlotClaim(ctx(t), claim(slot, "a", "report", slot))
	if err != nil || !first.Claimed {
		t.Fatalf("first claim = %+v, %v", first, err)
	}
	tx, err := s.Pool().Begin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	// The fence passes by the time it pins (a froze right after it).
	if _, err := tx.Exec(ctx(t), `SELECT 1 FROM `+pgx.Identifier{schema, "leases"}.Sanitize()+` WHERE name = $1 FOR KEY SHARE`, first.Lease.Name); err != nil {
		t.Fatal(err)
	}

	next := slot.Add(30 * time.Second)
	r := awaitWithoutLockWait(t, s.Pool(), schema, func() claimed {
		return claimBatch(t, other, claim(next, "b", "report", now), claim(next, "b", "billing", now))
	})
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got := r.rs[0]; got.Claimed || got.Refusal != store.ClaimLeaseBusy || got.Recorded != "" || got.Lease.Owner != "a" {
		t.Errorf("claim of the deposed writer's lease = %+v; want refused lease_busy, nothing recorded, naming a's lease", got)
	}
	if !r.rs[1].Claimed {
		t.Errorf("the other job in the batch = %+v; want claimed", r.rs[1])
	}
	if _, err := s.SlotGet(ctx(t), "report", next); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the busy claim wrote its slot: %v", err)
	}
	if l, err := s.LeaseGet(ctx(t), first.Lease.Name); err != nil || l.Generation != first.Lease.Generation || l.Owner != "a" {
		t.Errorf("the busy lease = %+v, %v; want a's, untouched", l, err)
	}

	if err := tx.Commit(ctx(t)); err != nil {
		t.Fatal(err)
	}
	again, err := other.SlotClaim(ctx(t), claim(next, "b", "report", now))
	if err != nil || !again.Claimed || again.Lease.Generation != first.Lease.Generation+1 {
		t.Fatalf("claim after the writer's transaction ended = %+v, %v; want claimed at generation %d", again, err, first.Lease.Generation+1)
	}
}

// A claim that races the winner of the same lease never waits for the
// winner's handler. The loser's snapshot shows the lease free (expired, or
// never taken); by the time the loser reaches the row, the winner's claim
// has committed and its handler has fenced in a transaction that may last
// the whole run. The loser must read the lease as held and go on, not lock
// the row behind the fence: that held up its whole batch, every job due at
// that instant on that replica (docs/reliability.md, finding 14).
//
// The interleaving is made, not hoped for: the loser's batch has a job
// whose lease row sorts first and is locked by a transaction standing for
// another claim in flight, so the loser stops there, after its snapshot and
// before the raced row; meanwhile the winner commits and fences. Then the
// first row is let go.
func TestClaimRacingTheWinnerDoesNotWaitForItsFence(t *testing.T) {
	t.Parallel()
	for _, fresh := range []bool{false, true} {
		name := "expired lease"
		if fresh {
			name = "lease never taken"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testClaimRacingTheWinner(t, fresh)
		})
	}
}

func testClaimRacingTheWinner(t *testing.T, fresh bool) {
	s, schema := newStore(t)
	loser := openOn(t, schema)
	leases, slots := pgx.Identifier{schema, "leases"}.Sanitize(), pgx.Identifier{schema, "slots"}.Sanitize()
	now, err := s.Now(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	slot := now.Add(-time.Minute).Truncate(time.Second)
	claim := func(job, owner string, slot, at time.Time) store.SlotClaimParams {
		return store.SlotClaimParams{Job: job, Slot: slot, LeaseName: "job:" + job, Owner: owner, TTL: time.Second, MaxAttempts: 3, Now: at}
	}
	// Earlier slots, claimed a minute ago: both leases expired since.
	jobs := []string{"aa-first"}
	if !fresh {
		jobs = append(jobs, "zz-raced")
	}
	for _, job := range jobs {
		if r, err := s.SlotClaim(ctx(t), claim(job, "old", slot, slot)); err != nil || !r.Claimed {
			t.Fatalf("earlier claim of %s = %+v, %v", job, r, err)
		}
	}
	next := slot.Add(30 * time.Second)

	begin := func() pgx.Tx {
		tx, err := s.Pool().Begin(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tx.Rollback(context.Background()) })
		return tx
	}
	// Another claim in flight holds the first job's lease row.
	inFlight := begin()
	if _, err := inFlight.Exec(ctx(t), `SELECT 1 FROM `+leases+` WHERE name = 'job:aa-first' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	// The winner's claim of the raced job, as its statement writes it: the
	// lease taken (or created) and the slot inserted, not yet committed.
	winner := begin()
	var generation int64
	err = winner.QueryRow(ctx(t), `
		INSERT INTO `+leases+` AS t (name, owner, generation, acquired_at, renewed_at, expires_at)
		VALUES ('job:zz-raced', 'winner', 1, now(), now(), now() + interval '1 hour')
		ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name, owner = EXCLUDED.owner, generation = t.generation + 1,
		       acquired_at = EXCLUDED.acquired_at, renewed_at = EXCLUDED.renewed_at, expires_at = EXCLUDED.expires_at
		RETURNING generation`).Scan(&generation)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := winner.Exec(ctx(t), `
		INSERT INTO `+slots+` (job, slot, status, owner, lease_name, generation, attempts, started_at)
		VALUES ('zz-raced', $1, 'running', 'winner', 'job:zz-raced', $2, 1, now())`, next, generation); err != nil {
		t.Fatal(err)
	}

	done := make(chan claimed, 1)
	go func() {
		done <- claimBatch(t, loser, claim("aa-first", "loser", next, now), claim("zz-raced", "loser", next, now))
	}()
	waitUntilBlockedBy(t, s.Pool(), backendPID(t, inFlight))

	// The winner commits and its handler fences, in a transaction that
	// stays open.
	if err := winner.Commit(ctx(t)); err != nil {
		t.Fatal(err)
	}
	handler := begin()
	if err := s.LeaseFence(ctx(t), handler, "job:zz-raced", generation); err != nil {
		t.Fatal(err)
	}
	handlerPID := backendPID(t, handler)
	if err := inFlight.Rollback(ctx(t)); err != nil {
		t.Fatal(err)
	}

	var r claimed
	wait.For(t, wait.Forever, func() bool {
		select {
		case r = <-done:
			return true
		default:
		}
		if blocked := blockedBy(t, s.Pool(), handlerPID); blocked != "" {
			t.Fatalf("the losing claim waits for the winner's fenced transaction: %.300s", blocked)
		}
		return false
	}, func() string {
		return "the losing claim did not return"
	})
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !r.rs[0].Claimed {
		t.Errorf("the batch's first job = %+v; want claimed", r.rs[0])
	}
	if got := r.rs[1]; got.Claimed || got.Refusal != store.ClaimHeld {
		t.Errorf("the raced job = %+v; want refused %s", got, store.ClaimHeld)
	}
	if err := handler.Commit(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if sl, err := s.SlotGet(ctx(t), "zz-raced", next); err != nil || sl.Owner != "winner" || sl.Generation != generation {
		t.Errorf("the raced slot = %+v, %v; want the winner's", sl, err)
	}
}

// backendPID is the server process of tx's connection.
func backendPID(t *testing.T, tx pgx.Tx) int {
	t.Helper()
	var pid int
	if err := tx.QueryRow(ctx(t), `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return pid
}

// blockedBy returns the statements that wait on a lock pid holds, or "".
// The blocking backend alone names them: pid is one of this test's, in a
// transaction on this test's schema. (They were found by the schema's name
// in their text, which pg_stat_activity keeps only the first 1,024 bytes
// of: a longer preamble to the claim statement hid it, and the check that
// no claim waits for a fence passed without looking.)
func blockedBy(t *testing.T, pool *pgxpool.Pool, pid int) string {
	t.Helper()
	var waiting string
	err := pool.QueryRow(ctx(t), `
		SELECT coalesce(string_agg(query, ' | '), '') FROM pg_stat_activity
		 WHERE datname = current_database() AND wait_event_type = 'Lock'
		   AND $1 = ANY (pg_blocking_pids(pid))`, pid).Scan(&waiting)
	if err != nil {
		t.Fatal(err)
	}
	return waiting
}

// waitUntilBlockedBy returns once a statement waits on a lock pid holds.
func waitUntilBlockedBy(t *testing.T, pool *pgxpool.Pool, pid int) {
	t.Helper()
	wait.For(t, wait.Forever, func() bool {
		return blockedBy(t, pool, pid) != ""
	}, func() string {
		return fmt.Sprintf("no statement waits on a lock backend %d holds", pid)
	})
}

// The other half of the fence: a takeover's transaction holds the row
// against a fence of the generation it replaces until it commits, and that
// fence then fails. Were the takeover's lock one a fence does not conflict
// with (a plain update of the row takes FOR NO KEY UPDATE), the deposed
// writer's fence would read the old row from its snapshot and pass while
// the takeover commits. Here the deposed owner's lease is still unexpired
// by the database clock, and the taker judges it expired by a pinned
// clock, so only the lock can turn the fence down.
func TestFenceOfTheReplacedGenerationWaitsForTheTakeover(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	old, ok, err := s.LeaseAcquire(ctx(t), store.LeaseAcquireParams{Name: "job:report", Owner: "a", TTL: time.Minute})
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	takeover, err := s.Pool().Begin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer takeover.Rollback(context.Background())
	var taken bool
	var l store.Lease
	err = takeover.QueryRow(ctx(t), s.LeaseAcquireSQL(), "job:report", "b", time.Minute.Microseconds(), old.ExpiresAt.Add(time.Second), 0).
		Scan(&taken, &l.Name, &l.Owner, &l.Generation, &l.AcquiredAt, &l.RenewedAt, &l.ExpiresAt)
	if err != nil || !taken || l.Generation != old.Generation+1 {
		t.Fatalf("takeover = %v %+v, %v", taken, l, err)
	}
	takeoverPID := backendPID(t, takeover)

	fenced := make(chan error, 1)
	go func() {
		tx, err := s.Pool().Begin(ctx(t))
		if err != nil {
			fenced <- err
			return
		}
		defer tx.Rollback(context.Background())
		fenced <- s.LeaseFence(ctx(t), tx, old.Name, old.Generation)
	}()
	wait.For(t, wait.Forever, func() bool {
		select {
		case err := <-fenced:
			t.Fatalf("the deposed owner's fence ended during the takeover (%v); want it to wait for the commit", err)
		default:
		}
		return blockedBy(t, s.Pool(), takeoverPID) != ""
	}, func() string {
		return "the deposed owner's fence does not wait on the takeover's lock"
	})
	if err := takeover.Commit(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := <-fenced; !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("the deposed owner's fence after the takeover = %v; want %v", err, store.ErrLeaseLost)
	}
}
