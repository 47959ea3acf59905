package mysql

import (
	"context"
	"testing"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/storetest"
)

// TestConformance runs the suite every store passes, each test on a
// database of its own. Fenced writes go where a handler's would: a table of
// its own in the same database, in a transaction from DB().
func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) storetest.Bundle {
		s, url := migrated(t)
		if _, err := s.DB().Exec(`CREATE TABLE fenced_writes (k VARCHAR(200) NOT NULL PRIMARY KEY) ENGINE = InnoDB`); err != nil {
			t.Fatal(err)
		}
		write := func(ctx context.Context, key string, commit bool, guard func(tx any) error) error {
			tx, err := s.DB().BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback() //nolint:errcheck // after a commit, a no-op
			if err := guard(tx); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO fenced_writes (k) VALUES (?)`, key); err != nil {
				return err
			}
			if !commit {
				return tx.Rollback()
			}
			return tx.Commit()
		}
		return storetest.Bundle{
			Store: s,
			Open:  func(t *testing.T) store.Store { return openStore(t, url, nil) },
			FencedWrite: func(ctx context.Context, name string, generation int64, key string) error {
				return write(ctx, key, true, func(tx any) error { return s.LeaseFence(ctx, tx, name, generation) })
			},
			WriteTx: write,
			Written: func(ctx context.Context, key string) bool {
				var n int
				if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM fenced_writes WHERE k = ?`, key).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n == 1
			},
			Dump: func(t *testing.T) string { return dumpTables(t, s.DB()) },
			RenameTable: func(t *testing.T, table string, back bool) {
				from, to := s.t(table), s.t(table)+"_aside"
				if back {
					from, to = to, from
				}
				if _, err := s.DB().Exec(`RENAME TABLE ` + from + ` TO ` + to); err != nil {
					t.Fatal(err)
				}
			},
		}
	})
}
