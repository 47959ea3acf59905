package mysql

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	driver "github.com/go-sql-driver/mysql"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Every Store is closed at cleanup, so no liveness watch or connection
	// opener may outlive its test.
	goleak.VerifyTestMain(m)
}

// serverURL is the server the tests create their databases on: a user
// that may create and drop databases. CI and this machine run MariaDB on
// 127.0.0.1:3306 (root, no password).
func serverURL() string {
	if u := os.Getenv("CRONFENCE_TEST_MYSQL_URL"); u != "" {
		return u
	}
	return "mysql://root@127.0.0.1:3306/mysql"
}

// newDatabase creates an empty database of the test's own and returns its
// URL; the database is dropped at cleanup.
func newDatabase(t *testing.T) string {
	t.Helper()
	admin := adminDB(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "cf_test_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("create database %s on %s (set CRONFENCE_TEST_MYSQL_URL to a MySQL 8 or MariaDB 10.6+ server's URL): %v", name, serverURL(), err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP DATABASE IF EXISTS " + name); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u := serverURL()
	return u[:strings.LastIndex(u, "/")+1] + name
}

// adminDB is a pool on the test server's default database, closed at
// cleanup.
func adminDB(t *testing.T) *sql.DB {
	t.Helper()
	cfg, err := parseDSN(serverURL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.ParseTime, cfg.Loc = true, nil
	connector, err := driver.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

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
