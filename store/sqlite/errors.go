package sqlite

import (
	"errors"
	"fmt"

	moderncsqlite "modernc.org/sqlite"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/internal/sqlstore"
)

// errorf builds every error the store returns (see sqlstore.Error).
func (s *Store) errorf(err error, format string, args ...any) error {
	return sqlstore.Error("sqlite", s.closed.Load(), err, fmt.Sprintf(format, args...))
}

// closedError is returned by a call made after Close, before it touches the
// database.
func closedError(op string) error {
	return fmt.Errorf("sqlite: %s: %w", op, store.ErrClosed)
}

// sqliteCode returns the extended SQLite result code in err's chain, or 0.
func sqliteCode(err error) int {
	var e *moderncsqlite.Error
	if errors.As(err, &e) {
		return e.Code()
	}
	return 0
}
