package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/cronfence/cronfence/store/sqlite"
	"github.com/cronfence/cronfence/store/storetest"
)

// The store benchmarks are storetest.Benchmark's, shared with the
// PostgreSQL store. SQLite runs in the process, so there are no round
// trips to count: the figures are latencies. Run them with
//
//	go test -run '^$' -bench . ./store/sqlite/
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
