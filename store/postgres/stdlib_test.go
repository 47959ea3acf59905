package postgres_test

import (
	"database/sql"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

// openStdlib opens a database/sql handle on pool, as a handler whose data
// layer uses database/sql would.
func openStdlib(t *testing.T, pool *pgxpool.Pool) *sql.DB {
	db := stdlib.OpenDBFromPool(pool)
	t.Cleanup(func() { _ = db.Close() })
	return db
}
