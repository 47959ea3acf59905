package riverbridge

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/cronfence/cronfence/store/postgres"
)

// OpenTestDatabase is setup for the package's external tests (the README's
// example): a pool on a schema of the test's own with cronfence's store
// and River migrated, an insert-and-work River client, and River's schema.
func OpenTestDatabase(t *testing.T) (*pgxpool.Pool, *postgres.Store, *river.Client[pgx.Tx], string) {
	b := setup(t)
	return b.pool, b.store, b.river, b.riverSchema
}
