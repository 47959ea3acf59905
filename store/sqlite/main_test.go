package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Every Store is closed at cleanup, so no connection opener or busy wait
	// may outlive its test.
	goleak.VerifyTestMain(m)
}

// openStore opens a Store on path and closes it at cleanup.
func openStore(t *testing.T, path string, cfg *Config) *Store {
	t.Helper()
	s, err := Open(context.Background(), path, cfg)
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// newFile returns the path of a database file in the test's own directory;
// nothing exists there until a Store opens it.
func newFile(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "cronfence.db")
}

// migrated opens a Store on a fresh, migrated file and returns it with the
// file's path, for a second Store to open.
func migrated(t *testing.T) (*Store, string) {
	t.Helper()
	path := newFile(t)
	s := openStore(t, path, nil)
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return s, path
}

// rawDB opens a plain database/sql pool on path with the store's DSN, the
// given busy timeout (0: fail at once on a lock) and edited by edit (nil for
// none): the view of another program on the same file.
func rawDB(t *testing.T, path string, busy time.Duration, edit func(string) string) *sql.DB {
	t.Helper()
	name, err := dsn(path, Config{BusyTimeout: busy})
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		name = edit(name)
	}
	db, err := sql.Open("sqlite", name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}
