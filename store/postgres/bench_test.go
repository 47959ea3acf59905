package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/store/postgres"
	"github.com/cronfence/cronfence/store/storetest"
)

// The store benchmarks are storetest.Benchmark's, shared with the SQLite
// store; the round trips are counted at the driver, by a pgx tracer on the
// pool. Run them with
//
//	go test -run '^$' -bench . ./store/postgres/
func BenchmarkStore(b *testing.B) {
	storetest.Benchmark(b, func(b *testing.B) storetest.BenchBundle {
		s, trips := benchStore(b)
		return storetest.BenchBundle{Store: s, Counter: trips, Begin: func(ctx context.Context) (any, func() error, func(), error) {
			tx, err := s.Pool().Begin(ctx)
			if err != nil {
				return nil, nil, nil, err
			}
			return tx, func() error { return tx.Commit(ctx) }, func() { _ = tx.Rollback(context.Background()) }, nil
		}}
	})
}

// BenchmarkRoundTrip runs SELECT 1 through the pool: the floor under every
// operation of BenchmarkStore (acquiring a pooled connection, one exchange
// with the server, scanning one row), for reading their figures.
func BenchmarkRoundTrip(b *testing.B) {
	s, trips := benchStore(b)
	storetest.Measure(b, trips, storetest.BenchCall{
		Call: func(ctx context.Context, _ int) error {
			var one int
			return s.Pool().QueryRow(ctx, `SELECT 1`).Scan(&one)
		},
	})
}

// benchStore returns a migrated store in a fresh schema, on a pool of its
// own whose every round trip is counted by the returned tracer. The
// pool has pgtest's settings: its configuration is copied from the pool
// pgtest.Schema returns, which stays idle. It closes at cleanup, before
// pgtest drops the schema.
func benchStore(b *testing.B) (*postgres.Store, *pgtest.RoundTrips) {
	b.Helper()
	base, schema := pgtest.Schema(b)
	trips := &pgtest.RoundTrips{}
	cfg := base.Config()   // a copy
	postgres.TunePool(cfg) // as the cronfence binary runs its pool
	trips.Trace(cfg)
	pool, err := pgxpool.NewWithConfig(b.Context(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	s, err := postgres.New(pool, &postgres.Config{Schema: schema})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Migrate(b.Context()); err != nil {
		b.Fatal(err)
	}
	return s, trips
}
