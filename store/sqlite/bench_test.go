package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store/sqlite"
	"github.com/cronfence/cronfence/store/storetest"
)

// The store benchmarks are storetest.Benchmark's, shared with the
// PostgreSQL store. SQLite runs in the process, so there are no round
// trips to count: the figures are latencies. Run them with
//
//	go test -run '^$' -bench 'Store|RoundTrip' ./store/sqlite/
func BenchmarkStore(b *testing.B) {
	storetest.Benchmark(b, func(b *testing.B) storetest.BenchBundle {
		s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "cronfence.db"), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			if err := s.Close(); err != nil {
				b.Error(err)
			}
		})
		if err := s.Migrate(b.Context()); err != nil {
			b.Fatal(err)
		}
		return storetest.BenchBundle{Store: s, Begin: func(ctx context.Context) (any, func() error, func(), error) {
			tx, err := s.DB().BeginTx(ctx, nil)
			if err != nil {
				return nil, nil, nil, err
			}
			return tx, tx.Commit, func() { _ = tx.Rollback() }, nil
		}}
	})
}

// BenchmarkPrune prunes an hour's history of 1,000 jobs that run every
// 10 s (360,000 slots and as many runs past the retention) out of a store
// that also keeps three hours of newer history, as the hourly prune of a
// busy host finds it. It reports how long the prune took and its longest
// transaction: the time every claim and finish waited for the database's
// only writer (storetest.MeasurePrune). Run it with
//
//	go test -run '^$' -bench BenchmarkPrune -benchtime 1x -timeout 30m -v ./store/sqlite/
func BenchmarkPrune(b *testing.B) {
	ctx := b.Context()
	s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "cronfence.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	if err := s.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	const jobs, every = 1000, 10 * time.Second
	cutoff := time.Now().Truncate(time.Hour)
	for range b.N {
		b.StopTimer()
		// Slots every 10 s from an hour before the cutoff to three hours
		// after it, a run row per slot started at its slot (in µs, as the
		// store writes them).
		from, slots := cutoff.Add(-time.Hour).UnixMicro(), int64(4*time.Hour/every)
		for _, stmt := range []string{`DELETE FROM cronfence_slots`, `DELETE FROM cronfence_runs`, fmt.Sprintf(`
			WITH RECURSIVE j(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM j WHERE n < %d),
			               t(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM t WHERE i < %d - 1)
			INSERT INTO cronfence_slots (job, slot, status, owner, lease_name, generation, attempts, started_at, finished_at)
			SELECT 'job-' || n, %d + i * %d, 'completed', 'a', 'job:job-' || n, 1, 1, %d + i * %d, %d + i * %d FROM j, t`,
			jobs, slots, from, every.Microseconds(), from, every.Microseconds(), from, every.Microseconds()), `
			INSERT INTO cronfence_runs (job, slot, manual, catch_up, owner, generation, attempt, started_at, finished_at, success, skipped, reason, error, logs)
			SELECT job, slot, 0, 0, owner, generation, 1, started_at, finished_at, 1, 0, '', '', '[]' FROM cronfence_slots ORDER BY slot, job`,
		} {
			if _, err := s.DB().ExecContext(ctx, stmt); err != nil {
				b.Fatal(err)
			}
		}
		storetest.MeasurePrune(b, s, cutoff, int64(jobs*int(time.Hour/every)))
	}
}
