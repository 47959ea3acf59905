package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/cronfence/cronfence/store"
)

// dumpTables returns every row of every table in the file, as text, so a
// rejected call can be shown to have written nothing.
func dumpTables(t *testing.T, db *sql.DB) string {
	t.Helper()
	rows, err := db.Query(`SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		rs, err := db.Query(`SELECT * FROM "` + n + `"`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rs.Columns()
		for rs.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rs.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s %q", n, vals))
		}
		if err := rs.Close(); err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// The table list Migrate and SchemaVersion check is the list Migrate
// creates: a migration that adds a table without adding it there fails here.
func TestHostileTableListMatchesMigrations(t *testing.T) {
	t.Parallel()
	s, _ := migrated(t)
	rows, err := s.DB().Query(`SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE 'cronfence\_%' ESCAPE '\' AND name <> 'cronfence_schema_migrations' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
	}
	want, err := tables(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(want)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Migrate creates %v, the checked list is %v", got, want)
	}
}

// A file with one of its tables dropped by hand is refused by
// SchemaVersion and Migrate, naming the table, instead of looking healthy
// and failing on every write: any but cronfence_job_state, the pause
// overrides, which fail open (the declared values decide).
func TestHostileMissingTable(t *testing.T) {
	t.Parallel()
	all, err := tables(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range all {
		if table == "cronfence_job_state" {
			continue // the pause overrides fail open (see TestConformance/PauseTable)
		}
		t.Run(table, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, path := migrated(t)
			if _, err := s.DB().Exec(`DROP TABLE ` + table); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.SchemaVersion(ctx); err == nil || !strings.Contains(err.Error(), table) {
				t.Errorf("SchemaVersion: %v, want an error naming %s", err, table)
			}
			// A fresh process, as `cronfence migrate` would be.
			other := openStore(t, path, nil)
			before := dumpTables(t, other.DB())
			if err := other.Migrate(ctx); err == nil || !strings.Contains(err.Error(), table) || !strings.Contains(err.Error(), "missing") {
				t.Errorf("Migrate: %v, want an error naming the missing %s", err, table)
			}
			if after := dumpTables(t, other.DB()); after != before {
				t.Errorf("a refused Migrate changed the file")
			}
		})
	}
}

// A file migrated by a newer binary is refused by Migrate with
// ErrSchemaTooNew and left as it was; SchemaVersion reports both versions.
func TestHostileForeignSchemaVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, path := migrated(t)
	if _, err := s.DB().Exec(`INSERT INTO cronfence_schema_migrations (version, applied_at) VALUES (99, 0)`); err != nil {
		t.Fatal(err)
	}
	other := openStore(t, path, nil)
	before := dumpTables(t, other.DB())
	err := other.Migrate(ctx)
	var sv *store.SchemaVersionError
	if !errors.Is(err, store.ErrSchemaTooNew) || !errors.As(err, &sv) || sv.Database != 99 || !strings.Contains(err.Error(), "99") {
		t.Errorf("Migrate: %v, want ErrSchemaTooNew naming version 99", err)
	}
	if after := dumpTables(t, other.DB()); after != before {
		t.Errorf("a refused Migrate changed the file")
	}
	db, bin, err := other.SchemaVersion(ctx)
	if err != nil || db != 99 || bin >= 99 {
		t.Errorf("SchemaVersion = %d, %d, %v", db, bin, err)
	}
}
