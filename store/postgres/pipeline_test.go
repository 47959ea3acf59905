package postgres

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cronfence/cronfence/internal/pgtest"
)

// A statement sent behind its settings (a large claim, finish or skip)
// reports its own error once, its settings' error once, and, when its
// rows were read but its transaction's commit was refused, that refusal:
// the caller must not take the batch for written.
func TestAPipelinedStatementReportsItsErrorsAndItsCommit(t *testing.T) {
	t.Parallel()
	base, schema := pgtest.Schema(t)
	s, err := New(base, &Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	table := pgx.Identifier{schema, "deferred"}.Sanitize()
	if _, err := base.Exec(context.Background(), `CREATE TABLE `+table+` (a int UNIQUE DEFERRABLE INITIALLY DEFERRED)`); err != nil {
		t.Fatal(err)
	}
	read := func(settings []string, sql string) ([]int32, error) {
		rows, err := s.queryBehind(context.Background(), settings, sql, nil)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, pgx.RowTo[int32])
	}
	for _, c := range []struct {
		name, setting, sql, want string
	}{
		{"the statement fails", largeBatchSQL, `SELECT 1 / (g - 3) FROM generate_series(1, 5) g`,
			`ERROR: division by zero (SQLSTATE 22012)`},
		{"a setting fails", "SET LOCAL cronfence_no_such_setting = 1", `SELECT 1`,
			`ERROR: unrecognized configuration parameter "cronfence_no_such_setting" (SQLSTATE 42704)`},
		{"the commit is refused", largeBatchSQL, `INSERT INTO ` + table + ` VALUES (1), (1) RETURNING a`,
			`ERROR: duplicate key value violates unique constraint "deferred_a_key" (SQLSTATE 23505)`},
	} {
		got, err := read([]string{c.setting}, c.sql)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: rows %v, error %v; want the error %q, once", c.name, got, err, c.want)
		}
	}
	var n int
	if err := base.QueryRow(context.Background(), `SELECT count(*) FROM `+table).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d rows written by a refused commit (%v); want none", n, err)
	}
	// The pool's connections are back, usable and outside any transaction.
	for range 3 {
		if got, err := read([]string{largeBatchSQL}, `SELECT 7`); err != nil || len(got) != 1 || got[0] != 7 {
			t.Fatalf("after the failures: %v, %v", got, err)
		}
	}
}
