package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/cronfence/cronfence/store"
)

// Store is a store.Store on one SQLite file. It is safe for concurrent use,
// and any number of Stores, in this process or others on the same host, may
// share the file.
type Store struct {
	db   *sql.DB
	gate writeGate

	closed atomic.Bool

	// schemaOK is set once the schema was seen at this binary's version or
	// newer, so the check costs one query per Store, not one per call.
	// Versions only grow, so it never needs unsetting.
	schemaOK atomic.Bool
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the SQLite database file at path. It
// does not change the schema: call Migrate before anything else. cfg may be
// nil.
func Open(ctx context.Context, path string, cfg *Config) (*Store, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	name, err := dsn(path, c)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", name)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	if err := checkFile(ctx, db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	return &Store{db: db, gate: newWriteGate(c.BusyTimeout)}, nil
}

// checkFile opens a first connection, so a path that cannot be opened or is
// not a database fails Open rather than the first call, and confirms WAL mode
// took effect: SQLite silently keeps the old journal mode where WAL is not
// supported (some network file systems), and the fencing argument in the
// package documentation assumes WAL.
func checkFile(ctx context.Context, db *sql.DB) error {
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if mode != "wal" {
		return fmt.Errorf("journal_mode is %q, not wal: the file system may not support WAL", mode)
	}
	return nil
}

// DB returns the store's connection pool on the file, for a handler that
// writes its own data there and fences it with LeaseFence. Every connection
// has the store's pragmas: BeginTx begins an IMMEDIATE transaction, which
// holds the file's write lock until it ends, so keep such transactions
// short, and call no Store method but LeaseFence and the reads while one is
// open: a write would wait for that very lock until BusyTimeout. The Store
// owns the pool: do not close it, call Close.
func (s *Store) DB() *sql.DB { return s.db }

// Close closes the connection pool. It is idempotent; every call after it
// returns an error wrapping store.ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("sqlite: close: %w", err)
	}
	return nil
}

// Now returns the process clock in UTC at microsecond precision: on one host
// it is the database clock.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	if s.closed.Load() {
		return time.Time{}, closedError("now")
	}
	return clock(time.Time{}), nil
}

// inTx runs fn in one immediate transaction, after checking the schema, and
// commits when fn returns nil. Every write of the store goes through it.
// BEGIN IMMEDIATE takes the write lock up front, which is what makes fn's
// reads and writes one atomic step against every other writer of the file,
// and the gate queues this Store's own writers for it (see writeGate).
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	leave, err := s.gate.enter(ctx)
	if err != nil {
		return err
	}
	defer leave()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := s.checkSchema(ctx, tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// querier is what *sql.DB and *sql.Tx have in common that the store uses.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}
