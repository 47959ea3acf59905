package sqlite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/cronfence/cronfence/store"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     *Config
		wantErr string // substring; empty for valid
	}{
		{name: "nil", cfg: nil},
		{name: "zero means default", cfg: &Config{}},
		{name: "one millisecond", cfg: &Config{BusyTimeout: time.Millisecond}},
		{name: "negative", cfg: &Config{BusyTimeout: -time.Second}, wantErr: "BusyTimeout must be at least 1ms, got -1s"},
		{name: "below a millisecond", cfg: &Config{BusyTimeout: 999 * time.Microsecond}, wantErr: "BusyTimeout must be at least 1ms, got 999µs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.cfg.withDefaults().validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, store.ErrInvalidArgument) {
				t.Fatalf("validate = %v, want an ErrInvalidArgument containing %q", err, tt.wantErr)
			}
			// Open refuses it before creating anything.
			path := newFile(t)
			if _, err := Open(context.Background(), path, tt.cfg); !errors.Is(err, store.ErrInvalidArgument) {
				t.Fatalf("Open = %v, want ErrInvalidArgument", err)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("Open with a bad config created %s (stat: %v)", path, err)
			}
		})
	}
}

// TestOpenPragmas reads back, on connections of the store's own pool, every
// setting the DSN asks for: a typo in a _pragma would otherwise be silently
// ignored by nobody but the tests.
func TestOpenPragmas(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		cfg      *Config
		wantBusy int
	}{
		{cfg: nil, wantBusy: 10000},
		{cfg: &Config{BusyTimeout: 1500 * time.Millisecond}, wantBusy: 1500},
	} {
		s := openStore(t, newFile(t), tt.cfg)
		ctx := context.Background()
		// Two connections held at once, so both cannot be the same one.
		for i := 0; i < 2; i++ {
			conn, err := s.DB().Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			var journal string
			var busy, synchronous, foreignKeys int
			for _, q := range []struct {
				pragma string
				dst    any
			}{
				{"journal_mode", &journal},
				{"busy_timeout", &busy},
				{"synchronous", &synchronous},
				{"foreign_keys", &foreignKeys},
			} {
				if err := conn.QueryRowContext(ctx, "PRAGMA "+q.pragma).Scan(q.dst); err != nil {
					t.Fatalf("PRAGMA %s: %v", q.pragma, err)
				}
			}
			if journal != "wal" || busy != tt.wantBusy || synchronous != 1 || foreignKeys != 1 {
				t.Errorf("conn %d: journal_mode=%s busy_timeout=%d synchronous=%d foreign_keys=%d, want wal %d 1 (NORMAL) 1",
					i, journal, busy, synchronous, foreignKeys, tt.wantBusy)
			}
		}
	}
}

// TestOpenTxLockImmediate proves a transaction from DB() holds the write lock
// from BEGIN, before any statement: another connection that will not wait
// cannot begin writing. A deferred BEGIN would take no lock at all.
func TestOpenTxLockImmediate(t *testing.T) {
	t.Parallel()
	s, path := migrated(t)
	ctx := context.Background()
	tx, err := s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()

	probe := rawDB(t, path, 0, nil)
	_, err = probe.BeginTx(ctx, nil)
	if code := sqliteCode(err); code != sqlite3.SQLITE_BUSY {
		t.Fatalf("second BEGIN IMMEDIATE while a DB() transaction is open: err = %v (code %d), want SQLITE_BUSY", err, code)
	}
	// Readers are not blocked: WAL.
	if _, err := s.LeaseGet(ctx, "nothing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("LeaseGet beside an open write transaction = %v, want ErrNotFound", err)
	}
}

func TestOpenPathIsEscaped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Each of these characters means something in a URI.
	name := "we?ird #name %41&b=c.db"
	s := openStore(t, filepath.Join(dir, name), nil)
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) == 0 || names[0] != name {
		t.Fatalf("files in the directory: %q, want %q (with its -wal and -shm)", names, name)
	}
	for _, n := range names {
		if !strings.HasPrefix(n, name) {
			t.Errorf("unexpected file %q: the path was not escaped", n)
		}
	}
}

func TestOpenRefusesBadPaths(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, path := range []string{"", ":memory:", "file:x.db?mode=memory", "a\x00b"} {
		if _, err := Open(ctx, path, nil); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("Open(%q) = %v, want ErrInvalidArgument", path, err)
		}
	}
	missing := filepath.Join(t.TempDir(), "no such directory", "x.db")
	if s, err := Open(ctx, missing, nil); err == nil {
		s.Close()
		t.Fatalf("Open(%q) succeeded, want an error at Open rather than at the first call", missing)
	} else if !strings.HasPrefix(err.Error(), "sqlite: ") {
		t.Errorf("error %q lacks the sqlite: prefix", err)
	}
	notDB := filepath.Join(t.TempDir(), "text.db")
	if err := os.WriteFile(notDB, []byte(strings.Repeat("not a database ", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(ctx, notDB, nil); err == nil {
		s.Close()
		t.Fatalf("Open of a text file succeeded")
	}
}
