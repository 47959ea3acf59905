package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/cronfence/cronfence/store"
)

// fenceSetup gives two Stores on one migrated file, a lease held by "A" on
// the process clock for an hour, and a ledger table for the handler's own
// writes.
func fenceSetup(t *testing.T) (a, b *Store, path string, lease store.Lease) {
	t.Helper()
	ctx := context.Background()
	a, path = migrated(t)
	b = openStore(t, path, nil)
	if _, err := a.DB().ExecContext(ctx, `CREATE TABLE ledger (entry TEXT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	lease, ok, err := a.LeaseAcquire(ctx, store.LeaseAcquireParams{Name: "close-day", Owner: "A", TTL: time.Hour})
	if err != nil || !ok {
		t.Fatalf("LeaseAcquire = %v, %v", ok, err)
	}
	return a, b, path, lease
}

func ledger(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT entry FROM ledger ORDER BY entry`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// TestFenceHoldsOffTakeoverUntilCommit: a handler fences its immediate
// transaction from DB(); another process (a second Store) tries to take the
// lease over with a clock pinned past its expiry. The takeover must wait for
// the handler's commit, so the fenced write lands under generation g and the
// takeover then gets g+1.
func TestFenceHoldsOffTakeoverUntilCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b, path, lease := fenceSetup(t)

	tx, err := a.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := a.LeaseFence(ctx, tx, lease.Name, lease.Generation); err != nil {
		t.Fatalf("LeaseFence on a held lease: %v", err)
	}

	// The mechanism: the fenced transaction holds the file's write lock.
	probe := rawDB(t, path, 0, nil)
	if _, err := probe.BeginTx(ctx, nil); sqliteCode(err) != sqlite3.SQLITE_BUSY {
		t.Fatalf("BEGIN IMMEDIATE beside the fenced transaction = %v, want SQLITE_BUSY", err)
	}

	var committed atomic.Bool
	type result struct {
		lease          store.Lease
		acquired       bool
		err            error
		afterCommitted bool
	}
	done := make(chan result, 1)
	go func() {
		l, ok, err := b.LeaseAcquire(ctx, store.LeaseAcquireParams{
			Name: lease.Name, Owner: "B", TTL: time.Hour, Now: lease.ExpiresAt.Add(time.Minute),
		})
		done <- result{l, ok, err, committed.Load()}
	}()
	// Not a wait for something to happen: a window in which the takeover
	// must not return. A correct store never fails here however slow the
	// machine; a store that let the takeover through fails almost always.
	select {
	case r := <-done:
		t.Fatalf("takeover returned while the fenced transaction was open: %+v", r)
	case <-time.After(100 * time.Millisecond):
	}

	if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (entry) VALUES ('commission under generation 1')`); err != nil {
		t.Fatalf("fenced write: %v", err)
	}
	committed.Store(true)
	if err := tx.Commit(); err != nil {
		t.Fatalf("commit of the fenced write: %v", err)
	}

	r := <-done
	if r.err != nil || !r.acquired {
		t.Fatalf("takeover after commit = %v, %v; want acquired", r.acquired, r.err)
	}
	if !r.afterCommitted {
		t.Errorf("takeover returned before the fenced transaction committed")
	}
	if r.lease.Generation != lease.Generation+1 || r.lease.Owner != "B" {
		t.Errorf("takeover got %+v, want owner B at generation %d", r.lease, lease.Generation+1)
	}
	if got := ledger(t, b.DB()); len(got) != 1 {
		t.Errorf("ledger = %q, want the fenced write committed", got)
	}

	// And A, fenced again now, is refused.
	tx2, err := a.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx2.Rollback()
	if err := a.LeaseFence(ctx, tx2, lease.Name, lease.Generation); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("LeaseFence by the old generation after the takeover = %v, want ErrLeaseLost", err)
	}
}

// TestFenceDeferredTransaction checks the claim in the package documentation
// that a deferred transaction is still fenced in WAL mode: the fence passes,
// a takeover commits (it does not wait, a deferred reader holds no write
// lock), and the handler's next write fails with SQLITE_BUSY_SNAPSHOT.
func TestFenceDeferredTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b, path, lease := fenceSetup(t)

	deferred := rawDB(t, path, DefaultBusyTimeout, func(dsn string) string {
		return strings.Replace(dsn, "_txlock=immediate", "_txlock=deferred", 1)
	})
	tx, err := deferred.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := a.LeaseFence(ctx, tx, lease.Name, lease.Generation); err != nil {
		t.Fatalf("LeaseFence in a deferred transaction: %v", err)
	}

	takeoverCtx, cancel := context.WithTimeout(ctx, 5*time.Second) // far below BusyTimeout: it must not wait at all
	defer cancel()
	l, ok, err := b.LeaseAcquire(takeoverCtx, store.LeaseAcquireParams{
		Name: lease.Name, Owner: "B", TTL: time.Hour, Now: lease.ExpiresAt.Add(time.Minute),
	})
	if err != nil || !ok || l.Generation != lease.Generation+1 {
		t.Fatalf("takeover beside a deferred fenced transaction = %+v, %v, %v; want generation %d", l, ok, err, lease.Generation+1)
	}

	_, err = tx.ExecContext(ctx, `INSERT INTO ledger (entry) VALUES ('late write')`)
	if code := sqliteCode(err); code != sqlite3.SQLITE_BUSY_SNAPSHOT {
		t.Fatalf("write after the takeover committed = %v (code %d), want SQLITE_BUSY_SNAPSHOT (%d)", err, code, sqlite3.SQLITE_BUSY_SNAPSHOT)
	}
	_ = tx.Rollback()
	if got := ledger(t, b.DB()); len(got) != 0 {
		t.Errorf("ledger = %q, want nothing written after the lease was lost", got)
	}
}

func TestFenceUnsupportedTx(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := migrated(t)
	conn, err := s.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, tc := range []struct {
		tx   any
		name string // as %T prints it
	}{
		{nil, "<nil>"},
		{"BEGIN", "string"},
		{s.DB(), "*sql.DB"},
		{conn, "*sql.Conn"}, // a connection is not a transaction: nothing would hold the lease
		{sql.Tx{}, "sql.Tx"},
	} {
		err := s.LeaseFence(ctx, tc.tx, "n", 1)
		if !errors.Is(err, store.ErrUnsupportedTx) || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("LeaseFence(%s) = %v, want ErrUnsupportedTx naming %s", tc.name, err, tc.name)
		}
	}
}
