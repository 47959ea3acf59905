package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/store/postgres"
	"github.com/cronfence/cronfence/store/storetest"
)

// The store benchmarks are storetest.Benchmark's, shared with the SQLite
// store; the round trips are counted at the driver, by a pgx tracer on the
// pool. Run them with
//
//	go test -run '^$' -bench 'Store|RoundTrip' ./store/postgres/
func BenchmarkStore(b *testing.B) {
	storetest.Benchmark(b, func(b *testing.B) storetest.BenchBundle {
		s, trips, _ := benchStore(b)
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
	s, trips, _ := benchStore(b)
	storetest.Measure(b, trips, storetest.BenchCall{
		Call: func(ctx context.Context, _ int) error {
			var one int
			return s.Pool().QueryRow(ctx, `SELECT 1`).Scan(&one)
		},
	})
}

// benchStore returns a migrated store in a fresh schema, and the schema,
// on a pool of its own whose every round trip is counted by the returned
// tracer. The pool has pgtest's settings: its configuration is copied from the pool
// pgtest.Schema returns, which stays idle. It closes at cleanup, before
// pgtest drops the schema.
func benchStore(b *testing.B) (*postgres.Store, *pgtest.RoundTrips, string) {
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
	return s, trips, schema
}

// BenchmarkPrune prunes an hour's history of 1,000 jobs that run every
// 10 s (360,000 slots and as many runs past the retention) out of a store
// that also keeps a day of newer history (8.6 million rows, within the
// retention), as the hourly prune of a busy cluster finds it. It reports
// how long the prune took and how many rows it read (the tables' sequential
// and index reads, from pg_stat_user_tables) per row it deleted. Run it with
//
//	go test -run '^$' -bench BenchmarkPrune -benchtime 1x -timeout 30m -v ./store/postgres/
func BenchmarkPrune(b *testing.B) {
	ctx := b.Context()
	s, _, schema := benchStore(b)
	pool := s.Pool()
	const jobs, every = 1000, 10 * time.Second
	var cutoff time.Time
	if err := pool.QueryRow(ctx, `SELECT date_trunc('hour', now())`).Scan(&cutoff); err != nil {
		b.Fatal(err)
	}
	for range b.N {
		b.StopTimer()
		// Slots every 10 s from 25 h before the cutoff's hour to the
		// cutoff's: the first hour is past the retention, the next 24 are
		// kept. A run row per slot, started at its slot.
		for _, table := range []string{"slots", "runs"} {
			if _, err := pool.Exec(ctx, `TRUNCATE `+pgx.Identifier{schema, table}.Sanitize()); err != nil {
				b.Fatal(err)
			}
		}
		from, to := cutoff.Add(-time.Hour), cutoff.Add(24*time.Hour)
		if _, err := pool.Exec(ctx, fmt.Sprintf(`
			INSERT INTO %s (job, slot, status, owner, lease_name, generation, attempts, started_at, finished_at)
			SELECT 'job-' || j, t, 'completed', 'a', 'job:job-' || j, 1, 1, t, t
			  FROM generate_series(1, %d) j, generate_series($1::timestamptz, $2::timestamptz, $3::interval) t`,
			pgx.Identifier{schema, "slots"}.Sanitize(), jobs), from, to.Add(-every), every); err != nil {
			b.Fatal(err)
		}
		if _, err := pool.Exec(ctx, fmt.Sprintf(`
			INSERT INTO %s (job, slot, owner, generation, attempt, started_at, finished_at, success)
			SELECT job, slot, owner, generation, 1, started_at, finished_at, true FROM %s ORDER BY slot, job`,
			pgx.Identifier{schema, "runs"}.Sanitize(), pgx.Identifier{schema, "slots"}.Sanitize())); err != nil {
			b.Fatal(err)
		}
		if _, err := pool.Exec(ctx, fmt.Sprintf(`VACUUM ANALYZE %s, %s`,
			pgx.Identifier{schema, "slots"}.Sanitize(), pgx.Identifier{schema, "runs"}.Sanitize())); err != nil {
			b.Fatal(err)
		}
		touchedBefore := pagesTouched(b, pool, schema)
		storetest.MeasurePrune(b, s, cutoff, int64(jobs*int(time.Hour/every)))
		touched := pagesTouched(b, pool, schema) - touchedBefore
		b.ReportMetric(float64(touched)/float64(2*jobs*int(time.Hour/every))*1000, "pages/1000-deleted")
	}
}

// pagesTouched sums the pages of the schema's slots and runs tables and
// their indexes read so far, from shared buffers or not. A backend sends
// its statistics in at most every second while busy and 10 s after it
// went idle, so the sum is read until it stays the same for 12 s.
func pagesTouched(b *testing.B, pool *pgxpool.Pool, schema string) int64 {
	b.Helper()
	last := int64(-1)
	for {
		var n int64
		if err := pool.QueryRow(b.Context(), `
			SELECT coalesce(sum(heap_blks_read + heap_blks_hit + coalesce(idx_blks_read, 0) + coalesce(idx_blks_hit, 0)), 0)::bigint
			  FROM pg_statio_user_tables WHERE schemaname = $1 AND relname IN ('slots', 'runs')`, schema).Scan(&n); err != nil {
			b.Fatal(err)
		}
		if n == last {
			return n
		}
		last = n
		time.Sleep(12 * time.Second)
	}
}
