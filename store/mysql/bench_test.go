package mysql_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/cronfence/cronfence/internal/mytest"
	"github.com/cronfence/cronfence/store/mysql"
	"github.com/cronfence/cronfence/store/storetest"
)

// The store benchmarks are storetest.Benchmark's, shared with the other
// stores. The round trips are counted at the driver (mysql.OpenCounting):
// each query (several statements sent at once are one), BEGIN and COMMIT.
// BenchmarkStoreStatements counts the statements instead, at the server.
//
//	go test -run '^$' -bench . ./store/mysql/
func BenchmarkStore(b *testing.B) {
	storetest.Benchmark(b, func(b *testing.B) storetest.BenchBundle {
		s, trips, err := mysql.OpenCounting(b.Context(), mytest.Database(b), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		if err := s.Migrate(b.Context()); err != nil {
			b.Fatal(err)
		}
		return storetest.BenchBundle{Store: s, Counter: trips, Begin: begin(s)}
	})
}

// BenchmarkStoreStatements is BenchmarkStore with the statements counted
// at the server: its global Questions (every statement a client sent,
// each of several sent at once, COMMIT included) before and after each
// call, less the counter's own reads; the "roundtrips/op" it reports are
// statements. Run it with nothing else on the server.
func BenchmarkStoreStatements(b *testing.B) {
	storetest.Benchmark(b, func(b *testing.B) storetest.BenchBundle {
		s := benchStore(b)
		return storetest.BenchBundle{Store: s, Counter: &serverCounter{db: mytest.Admin(b), b: b}, Begin: begin(s)}
	})
}

// begin opens a handler's transaction on s, for the fence.
func begin(s *mysql.Store) func(ctx context.Context) (any, func() error, func(), error) {
	return func(ctx context.Context) (any, func() error, func(), error) {
		tx, err := s.DB().BeginTx(ctx, nil)
		if err != nil {
			return nil, nil, nil, err
		}
		return tx, tx.Commit, func() { _ = tx.Rollback() }, nil
	}
}

// BenchmarkRoundTrip runs SELECT 1 through the store's pool: the floor
// under every operation of BenchmarkStore.
func BenchmarkRoundTrip(b *testing.B) {
	s := benchStore(b)
	storetest.Measure(b, &serverCounter{db: mytest.Admin(b), b: b}, storetest.BenchCall{
		Call: func(ctx context.Context, _ int) error {
			var one int
			return s.DB().QueryRowContext(ctx, `SELECT 1`).Scan(&one)
		},
	})
}

func benchStore(b *testing.B) *mysql.Store {
	b.Helper()
	s, err := mysql.Open(b.Context(), mytest.Database(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	if err := s.Migrate(b.Context()); err != nil {
		b.Fatal(err)
	}
	return s
}

// serverCounter reads the server's statement and connection counters
// (SHOW GLOBAL STATUS), leaving out the statements it sent itself.
type serverCounter struct {
	db     *sql.DB
	b      *testing.B
	probes int64 // SHOW statements sent so far, each counted by the server
}

func (c *serverCounter) status(name string) int64 {
	var key string
	var value int64
	if err := c.db.QueryRow(`SHOW GLOBAL STATUS LIKE '`+name+`'`).Scan(&key, &value); err != nil {
		c.b.Fatal(err)
	}
	c.probes++
	return value
}

func (c *serverCounter) Total() int64 { return c.status("Questions") - c.probes }

func (c *serverCounter) Connects() int64 { return c.status("Connections") }
