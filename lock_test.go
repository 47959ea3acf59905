package cronfence

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/internal/mytest"
	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/mysql"
	"github.com/cronfence/cronfence/store/postgres"
	"github.com/cronfence/cronfence/store/sqlite"
	"github.com/jackc/pgx/v5"
)

const ttl = 30 * time.Second

// backend opens stores on one database: the first for the code under test,
// the next ones as other replicas.
type backend struct {
	name string
	open func(t *testing.T) func(t *testing.T) store.Store
	// fencedWrite runs a transaction of the store's kind that fences with
	// lease and writes; it returns the fence's error.
	fencedWrite func(t *testing.T, s store.Store, lease *Lease) error
}

var backends = []backend{
	{
		name: "postgres",
		open: func(t *testing.T) func(t *testing.T) store.Store {
			_, schema := pgtest.Schema(t)
			return func(t *testing.T) store.Store {
				s, err := postgres.New(pgtest.NewPool(t), &postgres.Config{Schema: schema})
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Migrate(context.Background()); err != nil {
					t.Fatal(err)
				}
				return s
			}
		},
		fencedWrite: func(t *testing.T, s store.Store, lease *Lease) error {
			return pgx.BeginFunc(context.Background(), s.(*postgres.Store).Pool(), func(tx pgx.Tx) error {
				if err := lease.Fence(context.Background(), tx); err != nil {
					return err
				}
				_, err := tx.Exec(context.Background(), `SELECT 1`)
				return err
			})
		},
	},
	{
		name: "mysql",
		open: func(t *testing.T) func(t *testing.T) store.Store {
			url := mytest.Database(t)
			return func(t *testing.T) store.Store {
				s, err := mysql.Open(context.Background(), url, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
				if err := s.Migrate(context.Background()); err != nil {
					t.Fatal(err)
				}
				return s
			}
		},
		fencedWrite: func(t *testing.T, s store.Store, lease *Lease) error {
			tx, err := s.(*mysql.Store).DB().BeginTx(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback() }()
			if err := lease.Fence(context.Background(), tx); err != nil {
				return err
			}
			return tx.Commit()
		},
	},
	{
		name: "sqlite",
		open: func(t *testing.T) func(t *testing.T) store.Store {
			path := filepath.Join(t.TempDir(), "cronfence.db")
			return func(t *testing.T) store.Store {
				s, err := sqlite.Open(context.Background(), path, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
				if err := s.Migrate(context.Background()); err != nil {
					t.Fatal(err)
				}
				return s
			}
		},
		fencedWrite: func(t *testing.T, s store.Store, lease *Lease) error {
			tx, err := s.(*sqlite.Store).DB().BeginTx(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback() }()
			if err := lease.Fence(context.Background(), tx); err != nil {
				return err
			}
			return tx.Commit()
		},
	},
}

// eachBackend runs test once per store, in parallel.
func eachBackend(t *testing.T, test func(t *testing.T, b backend, open func(t *testing.T) store.Store)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			test(t, b, b.open(t))
		})
	}
}

// TestLock: Lock runs fn under a lease it renews, once across hosts, and
// gives the lease back however fn ends; bad input is refused before the
// store is touched.
func TestLock(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		test func(t *testing.T)
	}{
		{"RunsUnderLeaseAndReleases", testLockRunsUnderLeaseAndReleases},
		{"BusyDoesNotRun", testLockBusyDoesNotRun},
		{"ReturnsFnErrorAndReleases", testLockReturnsFnErrorAndReleases},
		{"PanicReleases", testLockPanicReleases},
		{"LeaseLostDuringFn", testLockLeaseLostDuringFn},
		{"ParentCancelledStillReleases", testLockParentCancelledStillReleases},
		{"BadInput", testLockBadInput},
	} {
		t.Run(tc.name, tc.test)
	}
}

func testLockRunsUnderLeaseAndReleases(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend, open func(t *testing.T) store.Store) {
		s := open(t)
		var inside *Lease
		ran, err := Lock(context.Background(), s, "nightly", ttl, func(ctx context.Context, lease *Lease) error {
			inside = lease
			held, err := s.LeaseGet(ctx, "nightly")
			if err != nil {
				return err
			}
			if held.Owner != OwnerID() || held.Generation != lease.Generation {
				t.Errorf("while fn runs the lease is %+v, want held by %s at %d", held, OwnerID(), lease.Generation)
			}
			return b.fencedWrite(t, s, lease)
		})
		if !ran || err != nil {
			t.Fatalf("Lock = %v, %v", ran, err)
		}
		if inside.Name != "nightly" || inside.Generation != 1 || inside.Owner != OwnerID() {
			t.Fatalf("fn got lease %+v", inside)
		}
		now, _ := s.Now(context.Background())
		if l, _ := s.LeaseGet(context.Background(), "nightly"); l.ExpiresAt.After(now) {
			t.Fatalf("lease not released after Lock: %+v", l)
		}
		// Released at once: the next Lock runs with the next generation.
		var next int64
		if ran, err := Lock(context.Background(), open(t), "nightly", ttl, func(_ context.Context, l *Lease) error {
			next = l.Generation
			return nil
		}); !ran || err != nil || next != 2 {
			t.Fatalf("second Lock = %v, %v, generation %d; want generation 2", ran, err, next)
		}
	})
}

func testLockBusyDoesNotRun(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend, open func(t *testing.T) store.Store) {
		s, other := open(t), open(t)
		ran, err := Lock(context.Background(), s, "nightly", ttl, func(ctx context.Context, _ *Lease) error {
			ran, err := Lock(ctx, other, "nightly", ttl, func(context.Context, *Lease) error {
				t.Error("the second Lock ran fn while the lease was held")
				return nil
			})
			if ran || err != nil {
				t.Errorf("second Lock = %v, %v; want false, nil", ran, err)
			}
			return nil
		})
		if !ran || err != nil {
			t.Fatalf("Lock = %v, %v", ran, err)
		}
	})
}

func testLockReturnsFnErrorAndReleases(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend, open func(t *testing.T) store.Store) {
		s := open(t)
		boom := errors.New("boom")
		ran, err := Lock(context.Background(), s, "nightly", ttl, func(context.Context, *Lease) error { return boom })
		if !ran || !errors.Is(err, boom) || errors.Is(err, ErrLeaseLost) {
			t.Fatalf("Lock = %v, %v; want true and fn's error alone", ran, err)
		}
		if ran, err := Lock(context.Background(), s, "nightly", ttl, func(context.Context, *Lease) error { return nil }); !ran || err != nil {
			t.Fatalf("Lock after a failed run = %v, %v; want it released", ran, err)
		}
	})
}

func testLockPanicReleases(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend, open func(t *testing.T) store.Store) {
		s := open(t)
		func() {
			defer func() {
				if r := recover(); r != "kaboom" {
					t.Fatalf("recovered %v, want fn's panic", r)
				}
			}()
			_, _ = Lock(context.Background(), s, "nightly", ttl, func(context.Context, *Lease) error { panic("kaboom") })
		}()
		if ran, err := Lock(context.Background(), s, "nightly", ttl, func(context.Context, *Lease) error { return nil }); !ran || err != nil {
			t.Fatalf("Lock after a panic = %v, %v; want the lease released", ran, err)
		}
	})
}

// The design seed's timeline through Lock: the lease is taken over while fn
// runs; fn's context is cancelled, its fenced write refused, Lock reports
// ErrLeaseLost, and the final release leaves the new holder alone.
func testLockLeaseLostDuringFn(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend, open func(t *testing.T) store.Store) {
		s, other := open(t), open(t)
		fake := clock.NewFake(time.Unix(1_000_000, 0))
		var taken store.Lease
		ran, err := lock(context.Background(), s, "nightly", ttl, func(ctx context.Context, lease *Lease) error {
			var ok bool
			var err error
			taken, ok, err = other.LeaseAcquire(ctx, store.LeaseAcquireParams{Name: "nightly", Owner: "replica-b", TTL: ttl, Now: lease.ExpiresAt})
			if err != nil || !ok {
				t.Fatalf("takeover: %v, %v", ok, err)
			}
			if err := fake.WaitForTimers(ctx, 1); err != nil {
				t.Fatal(err)
			}
			fake.Advance(ttl / 3) // the next renewal finds the lease gone
			<-ctx.Done()
			if cause := context.Cause(ctx); !errors.Is(cause, ErrLeaseLost) {
				t.Errorf("fn's context ended with %v, want ErrLeaseLost", cause)
			}
			if err := b.fencedWrite(t, s, lease); !errors.Is(err, ErrLeaseLost) {
				t.Errorf("fenced write after the takeover: %v, want ErrLeaseLost", err)
			}
			return ctx.Err()
		}, LockOptions{clock: fake})
		if !ran || !errors.Is(err, ErrLeaseLost) {
			t.Fatalf("Lock = %v, %v; want true and ErrLeaseLost", ran, err)
		}
		got, err := s.LeaseGet(context.Background(), "nightly")
		if err != nil || got != taken {
			t.Fatalf("after Lock the lease is %+v (%v), want the new holder's %+v untouched", got, err, taken)
		}
	})
}

func testLockParentCancelledStillReleases(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend, open func(t *testing.T) store.Store) {
		s := open(t)
		ctx, cancel := context.WithCancel(context.Background())
		ran, err := Lock(ctx, s, "nightly", ttl, func(ctx context.Context, _ *Lease) error {
			cancel() // a shutdown
			<-ctx.Done()
			return ctx.Err()
		})
		if !ran || !errors.Is(err, context.Canceled) || errors.Is(err, ErrLeaseLost) {
			t.Fatalf("Lock = %v, %v; want true, context.Canceled and no lease loss", ran, err)
		}
		if ran, err := Lock(context.Background(), s, "nightly", ttl, func(context.Context, *Lease) error { return nil }); !ran || err != nil {
			t.Fatalf("Lock after a shutdown = %v, %v; want the lease handed over at once", ran, err)
		}
	})
}

func testLockBadInput(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend, open func(t *testing.T) store.Store) {
		s := open(t)
		run := func(context.Context, *Lease) error {
			t.Error("fn ran on bad input")
			return nil
		}
		for _, tc := range []struct {
			name string
			s    store.Store
			key  string
			ttl  time.Duration
			fn   func(context.Context, *Lease) error
		}{
			{"nil store", nil, "x", ttl, run},
			{"nil fn", s, "x", ttl, nil},
			{"empty name", s, "", ttl, run},
			{"NUL in name", s, "a\x00b", ttl, run},
			{"zero TTL", s, "x", 0, run},
			{"negative TTL", s, "x", -time.Second, run},
		} {
			ran, err := Lock(context.Background(), tc.s, tc.key, tc.ttl, tc.fn)
			if ran || !errors.Is(err, store.ErrInvalidArgument) {
				t.Errorf("%s: Lock = %v, %v; want an ErrInvalidArgument", tc.name, ran, err)
			}
		}
		if _, err := s.LeaseGet(context.Background(), "x"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("bad input wrote a lease: %v", err)
		}
	})
}

func TestOwnerIDUniquePerProcess(t *testing.T) {
	if first, again := OwnerID(), OwnerID(); first != again {
		t.Fatalf("OwnerID changed within a process: %q, then %q", first, again)
	}
	if a, b := newOwnerID(), newOwnerID(); a == b {
		t.Fatalf("two incarnations got the same owner id %q", a)
	}
	if err := store.ValidateName("owner", OwnerID()); err != nil {
		t.Fatal(err)
	}
}
