package sqlite

import (
	"context"
	"testing"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/storetest"
)

// TestConformance runs the suite every store passes, each test on a file of
// its own. Fenced writes go where a handler's would: a table of its own in
// the same file, in an immediate transaction from DB().
func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) storetest.Bundle {
		s, path := migrated(t)
		if _, err := s.DB().Exec(`CREATE TABLE fenced_writes (key TEXT NOT NULL PRIMARY KEY) STRICT`); err != nil {
			t.Fatal(err)
		}
		return storetest.Bundle{
			Store: s,
			Open:  func(t *testing.T) store.Store { return openStore(t, path, nil) },
			FencedWrite: func(ctx context.Context, name string, generation int64, key string) error {
				tx, err := s.DB().BeginTx(ctx, nil)
				if err != nil {
					return err
				}
				defer tx.Rollback()
				if err := s.LeaseFence(ctx, tx, name, generation); err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO fenced_writes (key) VALUES (?)`, key); err != nil {
					return err
				}
				return tx.Commit()
			},
			WriteTx: func(ctx context.Context, key string, commit bool, guard func(tx any) error) error {
				tx, err := s.DB().BeginTx(ctx, nil)
				if err != nil {
					return err
				}
				defer tx.Rollback()
				if err := guard(tx); err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO fenced_writes (key) VALUES (?)`, key); err != nil {
					return err
				}
				if !commit {
					return tx.Rollback()
				}
				return tx.Commit()
			},
			Written: func(ctx context.Context, key string) bool {
				var n int
				if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM fenced_writes WHERE key = ?`, key).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n == 1
			},
			Dump: func(t *testing.T) string { return dumpTables(t, s.DB()) },
			RenameTable: func(t *testing.T, table string, back bool) {
				from, to := "cronfence_"+table, "cronfence_"+table+"_aside"
				if back {
					from, to = to, from
				}
				if _, err := s.DB().Exec(`ALTER TABLE ` + from + ` RENAME TO ` + to); err != nil {
					t.Fatal(err)
				}
			},
		}
	})
}
