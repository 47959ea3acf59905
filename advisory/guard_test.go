package advisory_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cronfence/cronfence/advisory"
	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/jackc/pgx/v5/pgxpool"
)

// uniqueName keeps concurrent tests, and concurrent runs of this package,
// from contending for each other's locks.
func uniqueName(t *testing.T) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return t.Name() + "/" + hex.EncodeToString(b)
}

// holders returns the backends holding name's advisory lock.
func holders(t *testing.T, pool *pgxpool.Pool, name string) []int32 {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT pid FROM pg_locks
		WHERE locktype = 'advisory' AND objsubid = 1 AND granted
		  AND (classid::bigint << 32 | objid::bigint) = $1`, advisory.Key(name))
	if err != nil {
		t.Fatal(err)
	}
	var pids []int32
	for rows.Next() {
		var pid int32
		if err := rows.Scan(&pid); err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return pids
}

func assertFree(t *testing.T, pool *pgxpool.Pool, name string) {
	t.Helper()
	if pids := holders(t, pool, name); len(pids) != 0 {
		t.Errorf("lock %q still held by backend(s) %v", name, pids)
	}
}

type result struct {
	ran bool
	err error
}

// holding is a Do whose fn has been entered and waits to be let go.
type holding struct {
	release chan struct{}
	done    chan result
	once    sync.Once
	res     result
}

// hold starts g.Do(name) in a goroutine and returns once fn is running; fn
// then runs body (if any) and waits for finish.
func hold(t *testing.T, g *advisory.Guard, name string, body func()) *holding {
	t.Helper()
	h := &holding{release: make(chan struct{}), done: make(chan result, 1)}
	entered := make(chan struct{})
	go func() {
		ran, err := g.Do(context.Background(), name, func(context.Context) error {
			if body != nil {
				body()
			}
			close(entered)
			<-h.release
			return nil
		})
		h.done <- result{ran, err}
	}()
	t.Cleanup(func() { h.finish() })
	select {
	case <-entered:
	case r := <-h.done:
		t.Fatalf("Do returned (%v, %v) without running fn", r.ran, r.err)
	}
	return h
}

// finish lets fn return and waits for Do's result.
func (h *holding) finish() result {
	h.once.Do(func() {
		close(h.release)
		h.res = <-h.done
	})
	return h.res
}

func mustRun(t *testing.T, g *advisory.Guard, name string) {
	t.Helper()
	called := false
	ran, err := g.Do(context.Background(), name, func(context.Context) error {
		called = true
		return nil
	})
	if !ran || err != nil || !called {
		t.Fatalf("Do(%q) = (%v, %v), fn called %v; want it to run", name, ran, err, called)
	}
}

func TestDoSkipsWhenBusy(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	a, b := advisory.New(pool), advisory.New(pgtest.NewPool(t))
	name := uniqueName(t)

	h := hold(t, a, name, nil)
	// Another replica, and another connection of the holder's own pool,
	// both find the lock busy.
	for who, g := range map[string]*advisory.Guard{"other replica": b, "same pool": a} {
		called := false
		ran, err := g.Do(context.Background(), name, func(context.Context) error {
			called = true
			return nil
		})
		if ran || err != nil || called {
			t.Errorf("%s: Do = (%v, %v), fn called %v; want (false, nil) and fn not called", who, ran, err, called)
		}
	}
	if r := h.finish(); !r.ran || r.err != nil {
		t.Errorf("holder's Do = (%v, %v), want (true, nil)", r.ran, r.err)
	}
	assertFree(t, pool, name)
}

func TestDoDistinctNamesRunConcurrently(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	a, b := advisory.New(pool), advisory.New(pgtest.NewPool(t))
	first, second, third := uniqueName(t), uniqueName(t), uniqueName(t)

	h := hold(t, a, first, nil)
	// While first is held: another replica and the holder's own pool each
	// take a different name, and the two of those overlap as well.
	inner := hold(t, b, second, nil)
	mustRun(t, a, third)
	for _, hh := range []*holding{inner, h} {
		if r := hh.finish(); !r.ran || r.err != nil {
			t.Errorf("Do = (%v, %v), want (true, nil)", r.ran, r.err)
		}
	}
}

func TestDoReleasesAfterFn(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	a, b := advisory.New(pool), advisory.New(pgtest.NewPool(t))
	name := uniqueName(t)

	mustRun(t, a, name)
	assertFree(t, pool, name)
	mustRun(t, b, name)
	mustRun(t, a, name)
	// The connection went back to the pool and was reused: the happy path
	// does not throw connections away.
	if n := pool.Stat().TotalConns(); n != 1 {
		t.Errorf("holder's pool has %d connections, want its one connection reused", n)
	}
}

func TestDoReturnsFnErrorAndReleases(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	a, b := advisory.New(pool), advisory.New(pgtest.NewPool(t))
	name := uniqueName(t)
	boom := errors.New("boom")

	ran, err := a.Do(context.Background(), name, func(context.Context) error { return boom })
	if !ran || !errors.Is(err, boom) || err.Error() != "boom" {
		t.Fatalf("Do = (%v, %v), want (true, boom) unwrapped", ran, err)
	}
	assertFree(t, pool, name)
	mustRun(t, b, name)
}

func TestDoPanicInFnReleases(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	a, b := advisory.New(pool), advisory.New(pgtest.NewPool(t))
	name := uniqueName(t)

	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Errorf("recovered %v, want the panic from fn to reach the caller", p)
			}
		}()
		_, _ = a.Do(context.Background(), name, func(context.Context) error { panic("boom") })
		t.Error("Do returned normally after fn panicked")
	}()
	assertFree(t, pool, name)
	mustRun(t, b, name)
	if n := pool.Stat().AcquiredConns(); n != 0 {
		t.Errorf("%d connections still acquired after the panic", n)
	}
}

func TestDoCallerContextCancelledDuringFnStillUnlocks(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	g := advisory.New(pool)
	name := uniqueName(t)

	ctx, cancel := context.WithCancel(context.Background())
	ran, err := g.Do(ctx, name, func(context.Context) error {
		cancel() // the process is shutting down while the job runs
		return nil
	})
	if !ran || err != nil {
		t.Fatalf("Do = (%v, %v), want (true, nil)", ran, err)
	}
	assertFree(t, pool, name)
	// Unlocked on the healthy session rather than by closing it.
	if n := pool.Stat().TotalConns(); n != 1 {
		t.Errorf("pool has %d connections, want its one connection kept", n)
	}
}

// TestDoHolderKilledNoFencing shows hazard 3 of the package documentation:
// when the holding session dies, the lock is free at once and a second
// process runs while the first function is still running.
func TestDoHolderKilledNoFencing(t *testing.T) {
	t.Parallel()
	admin := pgtest.NewPool(t)
	a, b := advisory.New(pgtest.NewPool(t)), advisory.New(pgtest.NewPool(t))
	name := uniqueName(t)

	var inside atomic.Int32
	h := hold(t, a, name, func() { inside.Add(1) })
	pids := holders(t, admin, name)
	if len(pids) != 1 {
		t.Fatalf("holders of %q = %v, want one backend", name, pids)
	}
	// The second argument makes the server wait until the backend is gone,
	// so there is nothing to poll for afterwards.
	var terminated bool
	if err := admin.QueryRow(context.Background(), "SELECT pg_terminate_backend($1, 10000)", pids[0]).Scan(&terminated); err != nil || !terminated {
		t.Fatalf("pg_terminate_backend(%d) = %v, %v", pids[0], terminated, err)
	}

	var both int32
	mustRunBody(t, b, name, func() { both = inside.Add(1); inside.Add(-1) })
	if both != 2 {
		t.Errorf("%d functions inside when the second started, want 2: the first never learnt it lost the lock", both)
	}

	r := h.finish()
	if !r.ran || r.err == nil || !strings.Contains(r.err.Error(), "unlocking failed") {
		t.Errorf("first Do = (%v, %v), want ran and an unlock error", r.ran, r.err)
	}
	assertFree(t, admin, name)
}

func mustRunBody(t *testing.T, g *advisory.Guard, name string, body func()) {
	t.Helper()
	ran, err := g.Do(context.Background(), name, func(context.Context) error {
		body()
		return nil
	})
	if !ran || err != nil {
		t.Fatalf("Do(%q) = (%v, %v), want it to run", name, ran, err)
	}
}
