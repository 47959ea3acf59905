package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	moderncsqlite "modernc.org/sqlite"

	"github.com/cronfence/cronfence/store"
)

// Store is a store.Store on one SQLite file. It is safe for concurrent use,
// and any number of Stores, in this process or others on the same host, may
// share the file.
type Store struct {
	db *sql.DB // DB(): the store's reads and the handlers' transactions

	// writer is the pool of the store's own write transactions: one
	// connection, no busy timeout, so beginImmediate does the waiting for
	// the write lock (see lockwait.go). The gate admits one write of this
	// Store at a time to it. Closing db closes it too.
	writer      *sql.DB
	gate        writeGate
	busyTimeout time.Duration
	nowFunc     func() time.Time // Config.NowFunc; see now

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
	// The writer's connections differ only in waiting for no lock: the same
	// journal mode, synchronous level and foreign keys.
	writerName, err := dsn(path, Config{BusyTimeout: 0})
	if err != nil {
		return nil, err
	}
	connector, err := moderncsqlite.NewConnector(name)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	writerConnector, err := moderncsqlite.NewConnector(writerName)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	writer := sql.OpenDB(writerConnector)
	writer.SetMaxOpenConns(1)
	// database/sql closes a connector that is an io.Closer when the pool
	// closes, so a caller who closes DB() closes the writer with it, and the
	// store's writes then fail with store.ErrClosed like its reads.
	db := sql.OpenDB(closingConnector{Connector: connector, also: writer})
	busyTimeout := c.BusyTimeout.Truncate(time.Millisecond) // as busy_timeout has it
	if err := checkFile(ctx, db, busyTimeout); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	return &Store{db: db, writer: writer, gate: newWriteGate(c.BusyTimeout), busyTimeout: busyTimeout, nowFunc: c.NowFunc}, nil
}

// closingConnector is a driver.Connector that closes another pool when
// database/sql closes it.
type closingConnector struct {
	driver.Connector
	also *sql.DB
}

func (c closingConnector) Close() error { return c.also.Close() }

// checkFile opens a first connection, so a path that cannot be opened or is
// not a database fails Open rather than the first call, and confirms WAL mode
// took effect: SQLite silently keeps the old journal mode where WAL is not
// supported (some network file systems), and the fencing argument in the
// package documentation assumes WAL.
//
// The first connection of a new file switches it to WAL (the DSN's
// journal_mode pragma, run as the connection opens). When two processes do
// that at once, one gets SQLITE_BUSY straight away: SQLite calls no busy
// handler for a lock upgrade made inside a read transaction, since waiting
// there could deadlock. So replicas starting together on a new file would
// fail Open at random; the connection is retried, as a write lock is, for
// at most BusyTimeout. Once the file is in WAL mode, opening a connection
// takes only a read lock and does not meet this.
func checkFile(ctx context.Context, db *sql.DB, busyTimeout time.Duration) error {
	var mode string
	err := whileBusy(ctx, busyTimeout, "the switch to WAL", func() error {
		return db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode)
	})
	if err != nil {
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

// Close closes the connection pools. It is idempotent; every call after it
// returns an error wrapping store.ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	// Closing db closes the writer too (closingConnector); closing the
	// writer again is a no-op that covers a db closed earlier by a caller.
	if err := errors.Join(s.db.Close(), s.writer.Close()); err != nil {
		return fmt.Errorf("sqlite: close: %w", err)
	}
	return nil
}

// Now returns the process clock (Config.NowFunc's, when set) in UTC at
// microsecond precision: on one host it is the database clock.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	if s.closed.Load() {
		return time.Time{}, closedError("now")
	}
	return s.now(time.Time{}), nil
}

// inTx runs fn in one immediate transaction, after checking the schema, and
// commits when fn returns nil. Every write of the store goes through it.
// BEGIN IMMEDIATE takes the write lock up front, which is what makes fn's
// reads and writes one atomic step against every other writer of the file;
// the gate queues this Store's own writers for it (see writeGate) and
// beginImmediate waits for it behind other processes (see lockwait.go).
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, leave, err := s.beginWrite(ctx)
	if err != nil {
		return err
	}
	defer leave()
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

// beginWrite enters the gate and begins an immediate transaction on the
// writer. The caller ends tx, then calls leave.
func (s *Store) beginWrite(ctx context.Context) (tx *sql.Tx, leave func(), err error) {
	leave, err = s.gate.enter(ctx)
	if err != nil {
		return nil, nil, err
	}
	tx, err = beginImmediate(ctx, s.writer, s.busyTimeout)
	if err != nil {
		leave()
		return nil, nil, err
	}
	return tx, leave, nil
}
