package pgtest

import (
	"context"
	"errors"
	"regexp"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// schemaExists asks over a connection of its own, so it works after the
// pools under test are closed.
func schemaExists(t *testing.T, schema string) bool {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)", schema).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	return exists
}

func TestSchemaIsFreshAndDistinct(t *testing.T) {
	t.Parallel()
	_, a := Schema(t)
	_, b := Schema(t)
	valid := regexp.MustCompile(`^cftest_[0-9a-f]{12}$`)
	for _, s := range []string{a, b} {
		if !valid.MatchString(s) {
			t.Errorf("schema name %q does not match %s", s, valid)
		}
		if schemaExists(t, s) {
			t.Errorf("schema %s exists already; Schema must leave creating it to the store", s)
		}
	}
	if a == b {
		t.Errorf("two Schema calls gave the same name %q", a)
	}
}

func TestSchemaPoolHasEmptySearchPath(t *testing.T) {
	t.Parallel()
	pool, schema := Schema(t)
	ctx := context.Background()
	table := pgx.Identifier{schema, "t"}.Sanitize()
	for _, sql := range []string{
		"CREATE SCHEMA " + pgx.Identifier{schema}.Sanitize(),
		"CREATE TABLE " + table + " (x int)",
		"INSERT INTO " + table + " VALUES (1)",
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}

	var path string
	if err := pool.QueryRow(ctx, "SHOW search_path").Scan(&path); err != nil {
		t.Fatal(err)
	}
	if path != "" {
		t.Errorf("search_path = %q, want empty", path)
	}

	// A qualified reference works; the same query without the schema and
	// an unqualified CREATE fail.
	var x int
	if err := pool.QueryRow(ctx, "SELECT x FROM "+table).Scan(&x); err != nil || x != 1 {
		t.Fatalf("qualified select: x = %d, err = %v", x, err)
	}
	for sql, code := range map[string]string{
		"SELECT x FROM t":        "42P01", // undefined_table
		"CREATE TABLE u (x int)": "3F000", // invalid_schema_name: no schema selected
	} {
		_, err := pool.Exec(ctx, sql)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != code {
			t.Errorf("%s: err = %v, want SQLSTATE %s", sql, err, code)
		}
	}
}

func TestSchemaDroppedAtCleanup(t *testing.T) {
	t.Parallel()
	var schema string
	var closed func() error
	// The subtest's cleanup runs when t.Run returns, so the parent can look.
	t.Run("use", func(t *testing.T) {
		pool, s := Schema(t)
		schema = s
		closed = func() error { return pool.Ping(context.Background()) }
		ctx := context.Background()
		if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{s}.Sanitize()); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, "CREATE TABLE "+pgx.Identifier{s, "t"}.Sanitize()+" (x int)"); err != nil {
			t.Fatal(err)
		}
		if !schemaExists(t, s) {
			t.Fatalf("schema %s was not created", s)
		}
	})
	if schema == "" {
		t.Fatal("subtest did not run")
	}
	if schemaExists(t, schema) {
		t.Errorf("schema %s still exists after cleanup", schema)
	}
	if err := closed(); err == nil {
		t.Error("pool still usable after cleanup; want it closed")
	}
}

func TestNewPoolSameDatabaseAndSettings(t *testing.T) {
	t.Parallel()
	a, _ := Schema(t)
	b := NewPool(t)
	if a == b {
		t.Fatal("NewPool returned the same pool")
	}
	ctx := context.Background()
	var dbA, dbB, pathB string
	var pidA, pidB int
	if err := a.QueryRow(ctx, "SELECT current_database(), pg_backend_pid()").Scan(&dbA, &pidA); err != nil {
		t.Fatal(err)
	}
	if err := b.QueryRow(ctx, "SELECT current_database(), pg_backend_pid(), current_setting('search_path')").Scan(&dbB, &pidB, &pathB); err != nil {
		t.Fatal(err)
	}
	if dbA != dbB {
		t.Errorf("databases differ: %q and %q", dbA, dbB)
	}
	if pathB != "" {
		t.Errorf("NewPool search_path = %q, want empty", pathB)
	}
	if pidA == pidB {
		t.Errorf("both pools use backend %d; want separate sessions", pidA)
	}
}
