package sqlite

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/cronfence/cronfence/store"
)

// DefaultBusyTimeout is the default of Config.BusyTimeout.
const DefaultBusyTimeout = 10 * time.Second

// Config configures a Store. A nil *Config means all defaults.
type Config struct {
	// BusyTimeout is how long a statement waits for a lock held by another
	// connection, in this process or another, before it fails with
	// SQLITE_BUSY. Every write transaction holds SQLite's single write lock
	// from its BEGIN, including a handler's fenced transaction, so this
	// bounds how long LeaseAcquire or SlotClaim waits behind one; a write
	// queued behind the same Store's other writes waits at most as long
	// again. The store's own writes wait by retrying the lock every
	// millisecond or two; connections of DB() wait under SQLite's busy
	// timeout. It is rounded down to whole milliseconds and must be at least
	// 1ms. Defaults to 10 seconds.
	BusyTimeout time.Duration

	// NowFunc, when set, replaces the process clock (the database clock of
	// a file on one host) for every call that does not pin its own Now,
	// fences included. It exists for tests that move a whole cluster's time
	// by hand: give every Store on the file the same function. Production
	// leaves it nil, and the process clock decides. Defaults to nil.
	NowFunc func() time.Time
}

// withDefaults returns a copy of cfg (which may be nil) with zero fields set
// to their defaults.
func (cfg *Config) withDefaults() Config {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.BusyTimeout == 0 {
		c.BusyTimeout = DefaultBusyTimeout
	}
	return c
}

func (cfg Config) validate() error {
	if cfg.BusyTimeout < time.Millisecond {
		return fmt.Errorf("sqlite: BusyTimeout must be at least 1ms, got %s: %w", cfg.BusyTimeout, store.ErrInvalidArgument)
	}
	return nil
}

// dsn builds the modernc.org/sqlite data source name for the file at path.
//
// The path becomes a "file:" URI so SQLite itself, not the driver, parses it:
// it is made absolute (so a later chdir cannot move the database) and
// percent-escaped, so a name holding '?', '#' or '%' still names that file.
// The driver reads the parameters beginning with '_' and SQLite ignores them:
//
//   - _txlock=immediate: every BeginTx is BEGIN IMMEDIATE, taking the write
//     lock up front, so a read-then-write transaction cannot be overtaken and
//     cannot fail halfway with SQLITE_BUSY_SNAPSHOT.
//   - busy_timeout: wait for a lock instead of failing at once (the driver
//     applies it before the other pragmas).
//   - journal_mode(WAL): readers and one writer proceed together.
//   - synchronous(NORMAL): in WAL mode a commit survives a process crash; a
//     power loss may lose the last commits, never corrupt the file.
//   - foreign_keys(1): off by default in SQLite; on, so a handler's own
//     tables in this file behave as their schema says.
func dsn(path string, cfg Config) (string, error) {
	if path == "" {
		return "", fmt.Errorf("sqlite: path must not be empty: %w", store.ErrInvalidArgument)
	}
	if path == ":memory:" || strings.HasPrefix(path, "file:") || strings.IndexByte(path, 0) >= 0 {
		// A memory database is private to one connection and a URI would
		// bring its own parameters: neither can be shared by processes.
		return "", fmt.Errorf("sqlite: path must be a file path, got %q: %w", path, store.ErrInvalidArgument)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("sqlite: resolve path %q: %w", path, err)
	}
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive letter: file:/C:/...
	}
	u := url.URL{Path: p}
	return fmt.Sprintf(
		"file:%s?_txlock=immediate&_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)",
		u.EscapedPath(), cfg.BusyTimeout.Milliseconds(),
	), nil
}
