package cronfencetest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/internal/mytest"
	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/mysql"
	"github.com/cronfence/cronfence/store/postgres"
	"github.com/cronfence/cronfence/store/sqlite"
)

// pgtest.Main also fails the package when a test leaked a goroutine.
func TestMain(m *testing.M) { pgtest.Main(m) }

// testBundle is a migrated store of the test's own and the table of a
// handler's effects on its database, as a user's test has them.
type testBundle struct {
	kind  string
	store store.Store
	db    *sql.DB // the handler's connections, on the store's database
	table string  // the effects: one row per key
	mark  string  // the placeholder of the first argument
}

// stores are the three kinds of store a test runs against: each opens one
// of its own, migrated, with an empty effects table beside it.
var stores = []struct {
	kind string
	open func(t *testing.T) testBundle
}{
	{"sqlite", func(t *testing.T) testBundle {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cronfence.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return testBundle{store: s, db: s.DB(), table: "effects", mark: "?"}
	}},
	{"postgres", func(t *testing.T) testBundle {
		pool, schema := pgtest.Schema(t)
		s, err := postgres.New(pool, &postgres.Config{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		// A handler on database/sql, as one on pgx would do: the store
		// fences either transaction.
		db := stdlib.OpenDBFromPool(pool)
		t.Cleanup(func() { _ = db.Close() })
		return testBundle{store: s, db: db, table: schema + ".effects", mark: "$1"}
	}},
	{"mysql", func(t *testing.T) testBundle {
		s, err := mysql.Open(context.Background(), mytest.Database(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return testBundle{store: s, db: s.DB(), table: "effects", mark: "?"}
	}},
}

// forEachStore runs test as a parallel subtest per kind of store, each
// with a setup that opens a bundle of its own.
func forEachStore(t *testing.T, test func(t *testing.T, setup func(t *testing.T) testBundle)) {
	for _, kind := range stores {
		t.Run(kind.kind, func(t *testing.T) {
			t.Parallel()
			test(t, func(t *testing.T) testBundle {
				t.Helper()
				b := kind.open(t)
				b.kind = kind.kind
				if err := b.store.Migrate(ctx(t)); err != nil {
					t.Fatal(err)
				}
				if _, err := b.db.ExecContext(ctx(t), `CREATE TABLE `+b.table+` (k VARCHAR(200) PRIMARY KEY)`); err != nil {
					t.Fatal(err)
				}
				return b
			})
		})
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// write is a handler's transaction: it writes one effect under key and
// completes the run's slot (complete) or fences first (not complete), as
// handlers do, and commits. An error rolls everything back.
func (b testBundle) write(ctx context.Context, run *cronfence.Run, key string, complete bool) error {
	return b.inTx(ctx, func(tx *sql.Tx) error {
		if !complete {
			if err := run.Fence(ctx, tx); err != nil {
				return err
			}
		}
		if err := b.insert(ctx, tx, key); err != nil {
			return err
		}
		if complete {
			return run.Complete(ctx, tx)
		}
		return nil
	})
}

// inTx runs fn in a transaction on the handler's connections and commits
// unless it failed.
func (b testBundle) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	return tx.Commit()
}

func (b testBundle) insert(ctx context.Context, tx *sql.Tx, key string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO `+b.table+` (k) VALUES (`+b.mark+`)`, key)
	return err
}

// effects returns the keys written, in order.
func (b testBundle) effects(t *testing.T) []string {
	t.Helper()
	rows, err := b.db.QueryContext(ctx(t), `SELECT k FROM `+b.table+` ORDER BY k`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return keys
}

// recorder is a testing.TB that records the failures a helper reports
// instead of failing the test, so that a test can check them. Fatalf ends
// the goroutine as testing's does: call the helper through run.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	failed []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = append(r.failed, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// run calls fn with r on a goroutine of its own, which its Fatalf may end,
// and returns the failures it reported.
func (r *recorder) run(fn func(tb testing.TB)) []string {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(r)
	}()
	<-done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

// failures runs fn with a recorder on t and returns what it reported.
func failures(t *testing.T, fn func(tb testing.TB)) []string {
	return (&recorder{TB: t}).run(fn)
}
