package postgres_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
)

// schemaTables lists the tables in schema.
func schemaTables(t *testing.T, s *postgres.Store, schema string) []string {
	t.Helper()
	rows, err := s.Pool().Query(ctx(t), `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1`, schema)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// dumpSchema returns every row of every table in schema, as text, so a
// rejected call can be shown to have written nothing.
func dumpSchema(t *testing.T, s *postgres.Store, schema string) string {
	t.Helper()
	var out []string
	for _, table := range schemaTables(t, s, schema) {
		rows, err := s.Pool().Query(ctx(t), `SELECT r::text FROM `+pgx.Identifier{schema, table}.Sanitize()+` r ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			out = append(out, table+" "+l)
		}
	}
	return strings.Join(out, "\n")
}

// A schema with any one of its tables dropped by hand is refused by
// SchemaVersion and Migrate, naming the table, instead of looking healthy
// and failing on every write: any but job_state, the pause overrides, which
// fail open (the declared values decide).
func TestHostileMissingTable(t *testing.T) {
	t.Parallel()
	probe, probeSchema := newStore(t)
	var tables []string
	for _, table := range schemaTables(t, probe, probeSchema) {
		// job_state may be missing: the pause overrides fail open (see
		// TestConformance/PauseTable).
		if table != "schema_migrations" && table != "job_state" {
			tables = append(tables, table)
		}
	}
	if len(tables) < 4 {
		t.Fatalf("Migrate created only %v", tables)
	}
	for _, table := range tables {
		t.Run(table, func(t *testing.T) {
			t.Parallel()
			c := ctx(t)
			s, schema := newStore(t)
			if _, err := s.Pool().Exec(c, `DROP TABLE `+pgx.Identifier{schema, table}.Sanitize()+` CASCADE`); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.SchemaVersion(c); err == nil || !strings.Contains(err.Error(), table) {
				t.Errorf("SchemaVersion: %v, want an error naming %s", err, table)
			}
			other := openOn(t, schema) // a fresh process, as `cronfence migrate` would be
			before := dumpSchema(t, s, schema)
			if err := other.Migrate(c); err == nil || !strings.Contains(err.Error(), table) {
				t.Errorf("Migrate: %v, want an error naming the missing %s", err, table)
			}
			if after := dumpSchema(t, s, schema); after != before {
				t.Errorf("a refused Migrate changed the schema")
			}
		})
	}
}

// A schema migrated by a newer binary is refused by Migrate with
// ErrSchemaTooNew and left as it was; SchemaVersion reports both versions.
func TestHostileForeignSchemaVersion(t *testing.T) {
	t.Parallel()
	c := ctx(t)
	s, schema := newStore(t)
	if _, err := s.Pool().Exec(c, `INSERT INTO `+pgx.Identifier{schema, "schema_migrations"}.Sanitize()+` (version, name) VALUES (99, 'future')`); err != nil {
		t.Fatal(err)
	}
	other := openOn(t, schema)
	before := dumpSchema(t, s, schema)
	err := other.Migrate(c)
	var sv *store.SchemaVersionError
	if !errors.Is(err, store.ErrSchemaTooNew) || !errors.As(err, &sv) || sv.Database != 99 || !strings.Contains(err.Error(), "99") {
		t.Errorf("Migrate: %v, want ErrSchemaTooNew naming version 99", err)
	}
	if after := dumpSchema(t, s, schema); after != before {
		t.Errorf("a refused Migrate changed the schema")
	}
	db, bin, err := other.SchemaVersion(c)
	if err != nil || db != 99 || bin >= 99 {
		t.Errorf("SchemaVersion = %d, %d, %v", db, bin, err)
	}
}
