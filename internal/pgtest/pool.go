package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SchemaPrefix starts the name of every schema Schema hands out, so leftovers
// of a killed test run are easy to find and drop.
const SchemaPrefix = "cftest_"

const (
	// setupTimeout bounds connecting a new pool.
	setupTimeout = 30 * time.Second

	// cleanupTimeout bounds closing a pool and dropping a schema at cleanup.
	cleanupTimeout = 30 * time.Second
)

// Schema returns a new pool on the test database and a fresh, unique schema
// name that does not exist yet: the store under test creates it when it
// migrates. The pool's search_path is empty, so a query that forgets to
// qualify a table with the schema fails. At cleanup the pool is closed and
// the schema dropped, with everything in it.
func Schema(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	url := URL(t)
	schema := SchemaPrefix + randomHex(6)
	// Cleanups run last-registered first: the pool below closes before
	// the schema is dropped, so none of its sessions holds a lock the drop
	// would wait for.
	t.Cleanup(func() { dropSchema(t, url, schema) })
	return newPool(t, url, nil), schema
}

// NewPool returns another pool on the test database with the same settings
// as Schema's (for a second replica in the same test), closed at cleanup.
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return newPool(t, URL(t), nil)
}

// NewPoolWith is NewPool with the pool's config changed by tune first (a
// connection bound, an application_name to find its sessions by).
func NewPoolWith(t testing.TB, tune func(*pgxpool.Config)) *pgxpool.Pool {
	t.Helper()
	return newPool(t, URL(t), tune)
}

func newPool(t testing.TB, url string, tune func(*pgxpool.Config)) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = ""
	if tune != nil {
		tune(cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() { closePool(t, pool) })
	// Connecting now makes a broken setup fail here, not in the test body.
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("pgtest: connecting a pool: %v", err)
	}
	return pool
}

// closePool closes pool, reporting instead of hanging when the test kept a
// connection acquired: pgxpool's Close waits for every one to come back.
func closePool(t testing.TB, pool *pgxpool.Pool) {
	done := make(chan struct{})
	go func() {
		pool.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(cleanupTimeout):
		t.Errorf("pgtest: pool not closed after %s: the test still holds %d acquired connection(s)", cleanupTimeout, pool.Stat().AcquiredConns())
	}
}

// dropSchema drops schema over a short-lived connection of its own, since
// the test's pools are closed by now.
func dropSchema(t testing.TB, url, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Errorf("pgtest: dropping schema %s: %v", schema, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		t.Errorf("pgtest: dropping schema %s: %v", schema, err)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported systems
	return hex.EncodeToString(b)
}
