package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/cronfence/cronfence/internal/mytest"
)

func TestMain(m *testing.M) {
	// Every Store is closed at cleanup, so no liveness watch or connection
	// opener may outlive its test.
	goleak.VerifyTestMain(m)
}

// newDatabase creates an empty database of the test's own and returns its
// URL; the database is dropped at cleanup.
func newDatabase(t *testing.T) string { return mytest.Database(t) }

// adminDB is a pool on the test server, closed at cleanup.
func adminDB(t *testing.T) *sql.DB { return mytest.Admin(t) }

// openStore opens a Store on url and closes it at cleanup.
func openStore(t *testing.T, url string, cfg *Config) *Store {
	t.Helper()
	s, err := Open(context.Background(), url, cfg)
	if err != nil {
		t.Fatalf("Open(%q): %v", url, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// migrated opens a Store on a fresh, migrated database and returns it with
// the database's URL, for a second Store to open.
func migrated(t *testing.T) (*Store, string) {
	t.Helper()
	url := newDatabase(t)
	s := openStore(t, url, nil)
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return s, url
}

// dumpTables returns every row of every table in the store's database, as
// text in a stable order, so a rejected call can be shown to have written
// nothing.
func dumpTables(t *testing.T, db *sql.DB) string {
	t.Helper()
	rows, err := db.Query(`SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() ORDER BY table_name`)
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
		rs, err := db.Query("SELECT * FROM `" + n + "`")
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
			for i, v := range vals {
				if b, ok := v.([]byte); ok {
					vals[i] = string(b)
				}
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
