package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/internal/wait"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
)

// openCluster returns a migrated store on a throwaway server (or, with
// migrate false, on a standby whose schema comes from its primary).
func openCluster(t *testing.T, url string, migrate bool) *postgres.Store {
	t.Helper()
	pool, err := pgxpool.New(ctx(t), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s, err := postgres.New(pool, &postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if migrate {
		if err := s.Migrate(ctx(t)); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// waitReplayed returns once the standby replayed everything the primary
// wrote so far.
func waitReplayed(t *testing.T, primary, standby *postgres.Store) {
	t.Helper()
	var lsn string
	if err := primary.Pool().QueryRow(ctx(t), `SELECT pg_current_wal_lsn()::text`).Scan(&lsn); err != nil {
		t.Fatal(err)
	}
	wait.For(t, wait.Forever, func() bool {
		var done bool
		if err := standby.Pool().QueryRow(ctx(t), `SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn`, lsn).Scan(&done); err != nil {
			t.Fatal(err)
		}
		return done
	}, func() string {
		return "the standby did not replay the primary's WAL up to " + lsn
	})
}

// An asynchronous standby promoted after replication was cut off has lost
// the primary's last commits. One of them gave holder A generation 2 of a
// lease; the new primary, which never saw it, must not give generation 2
// to holder B: A's writer, frozen through the failover, then wakes, reaches
// the new primary, and fences with its token. It must be refused, and B's
// token must be above every token the old primary issued.
func TestFencingTokenIsNotReissuedAfterAnAsynchronousFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a primary and a standby of its own")
	}
	t.Parallel()
	primary := pgtest.NewCluster(t)
	link := pgtest.NewProxyTo(t, primary) // the standby streams through it
	standby := pgtest.NewStandby(t, link.Addr())
	old := openCluster(t, primary.URL(), true)
	promoted := openCluster(t, standby.URL(), false)

	const name = "job:pay"
	first, ok, err := old.LeaseAcquire(ctx(t), store.LeaseAcquireParams{Name: name, Owner: "z", TTL: time.Minute})
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := old.LeaseRelease(ctx(t), first.Ref()); err != nil {
		t.Fatal(err)
	}
	waitReplayed(t, old, promoted)

	link.Cut() // replication stops; the primary goes on alone
	a, ok, err := old.LeaseAcquire(ctx(t), store.LeaseAcquireParams{Name: name, Owner: "a", TTL: time.Minute})
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	primary.Kill(t)
	standby.Promote(t)

	b, ok, err := promoted.LeaseAcquire(ctx(t), store.LeaseAcquireParams{Name: name, Owner: "b", TTL: time.Minute})
	if err != nil || !ok {
		t.Fatalf("acquisition on the promoted standby = %+v, %v, %v", b, ok, err)
	}
	if b.Generation <= a.Generation {
		t.Errorf("the promoted primary gave generation %d to b; the lost primary had given %d to a: a token may never be issued twice", b.Generation, a.Generation)
	}

	// a's writer reaches the new primary with its token.
	for _, fence := range []struct {
		name string
		fn   func(tx pgx.Tx) error
	}{
		{"LeaseFence", func(tx pgx.Tx) error { return promoted.LeaseFence(ctx(t), tx, name, a.Generation) }},
		{"SQL fence()", func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx(t), `SELECT cronfence.fence($1, $2)`, name, a.Generation)
			return err
		}},
	} {
		tx, err := promoted.Pool().Begin(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		err = fence.fn(tx)
		_ = tx.Rollback(context.Background())
		if err == nil {
			t.Errorf("%s of a's lost generation %d passed on the promoted primary, where b holds generation %d", fence.name, a.Generation, b.Generation)
		} else if fence.name == "LeaseFence" && !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("%s of a's lost generation = %v; want %v", fence.name, err, store.ErrLeaseLost)
		}
	}
	if err := promoted.LeaseFence(ctx(t), mustBegin(t, promoted), name, b.Generation); err != nil {
		t.Errorf("b's own fence on the promoted primary: %v", err)
	}
}

func mustBegin(t *testing.T, s *postgres.Store) pgx.Tx {
	t.Helper()
	tx, err := s.Pool().Begin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

// After a failover the old primary may live on, demoted to read-only (or
// restarted as a standby). The store's pooled connections to it then fail
// every write with read_only_sql_transaction, and a pool keeps such
// connections for their whole lifetime (an hour by default): the replica
// would count the store as down until then. With a multi-host URL and
// target_session_attrs=read-write, the store must let those connections
// go at the first such error, so that the next call reaches the writable
// host.
func TestReadOnlyServerSendsTheStoreToTheWritableHost(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two PostgreSQL clusters of its own")
	}
	t.Parallel()
	first, second := pgtest.NewCluster(t), pgtest.NewCluster(t)
	openCluster(t, second.URL(), true) // the schema, migrated on the host failed over to
	url := "postgres://postgres@" + first.Addr() + "," + second.Addr() + "/postgres?sslmode=disable&target_session_attrs=read-write"
	s := openCluster(t, url, true)
	acquire := func(owner string) (store.Lease, error) {
		l, _, err := s.LeaseAcquire(ctx(t), store.LeaseAcquireParams{Name: "job:" + owner, Owner: owner, TTL: time.Minute})
		return l, err
	}
	if _, err := acquire("before"); err != nil {
		t.Fatal(err)
	}
	key, release, err := s.LivenessHold(ctx(t), "owner-a")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if port := serverPort(t, s); port != first.Addr()[len("127.0.0.1:"):] {
		t.Fatalf("the store's connections go to port %s; want the first host, %s", port, first.Addr())
	}

	demoted := openCluster(t, first.URL(), false)
	if _, err := demoted.Pool().Exec(ctx(t), `ALTER SYSTEM SET default_transaction_read_only = on`); err != nil {
		t.Fatal(err)
	}
	if _, err := demoted.Pool().Exec(ctx(t), `SELECT pg_reload_conf()`); err != nil {
		t.Fatal(err)
	}
	// The reload reaches the server's sessions asynchronously.
	wait.For(t, wait.Forever, func() bool {
		var ro string
		if err := s.Pool().QueryRow(ctx(t), `SHOW transaction_read_only`).Scan(&ro); err != nil {
			t.Fatal(err)
		}
		return ro == "on"
	}, func() string {
		return "the store's session is still read-write after the demoted host's reload"
	})

	// One call may fail on a connection to the demoted host; the next
	// reaches the writable one.
	if _, err := acquire("during"); err == nil {
		t.Logf("the first write after the demotion went through")
	}
	if _, err := acquire("after"); err != nil {
		t.Fatalf("the second write after the demotion: %v; want it on the writable host", err)
	}
	if port := serverPort(t, s); port != second.Addr()[len("127.0.0.1:"):] {
		t.Fatalf("the store's connections go to port %s after the demotion; want the writable host, %s", port, second.Addr())
	}
	// The liveness lock follows: held on the writable host, where the
	// claims that record its key are judged. (Left on the demoted host,
	// every lease of the owner would look like a dead owner's.)
	writable := openCluster(t, second.URL(), false)
	// ctx(t)'s bound: not a timing limit, only what ends the test if the
	// lock never moves.
	wait.For(t, 60*time.Second, func() bool {
		return advisoryHeld(t, writable, key) && s.LiveKeyHeld(key)
	}, func() string {
		return fmt.Sprintf("the liveness lock was not taken on the writable host (held there: %v; the store counts it held: %v)",
			advisoryHeld(t, writable, key), s.LiveKeyHeld(key))
	})
}

// advisoryHeld reports whether a session of s's server holds the advisory
// lock key.
func advisoryHeld(t *testing.T, s *postgres.Store, key int64) bool {
	t.Helper()
	rows, err := s.Pool().Query(ctx(t), `SELECT classid::bigint, objid::bigint FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var hi, lo int64
		if err := rows.Scan(&hi, &lo); err != nil {
			t.Fatal(err)
		}
		if uint64(hi)<<32|uint64(lo) == uint64(key) {
			return true
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return false
}

func serverPort(t *testing.T, s *postgres.Store) string {
	t.Helper()
	var port string
	if err := s.Pool().QueryRow(ctx(t), `SELECT inet_server_port()::text`).Scan(&port); err != nil {
		t.Fatal(err)
	}
	return port
}

// A read-only refusal in the caller's own transaction says nothing of the
// server: a handler may fence inside BEGIN READ ONLY, which PostgreSQL
// refuses (a row lock needs a read-write transaction). The store must not
// take that for a demoted server and drop its pool (and its liveness lock,
// which would let others take this owner's leases over).
func TestReadOnlyCallerTransactionLeavesThePoolAlone(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	l, ok, err := s.LeaseAcquire(ctx(t), store.LeaseAcquireParams{Name: "job:report", Owner: "a", TTL: time.Minute})
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	opened := s.Pool().Stat().NewConnsCount()
	tx, err := s.Pool().BeginTx(ctx(t), pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.LeaseFence(ctx(t), tx, l.Name, l.Generation); err == nil {
		t.Fatal("a fence in a read-only transaction passed")
	}
	_ = tx.Rollback(context.Background())
	if _, err := s.LeaseGet(ctx(t), l.Name); err != nil {
		t.Fatal(err)
	}
	if now := s.Pool().Stat().NewConnsCount(); now != opened {
		t.Fatalf("the pool opened %d new connections after a caller's read-only transaction was refused; want none (it was reset)", now-opened)
	}
}
