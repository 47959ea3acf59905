package sqlite

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"

	moderncsqlite "modernc.org/sqlite"

	"github.com/cronfence/cronfence/store"
)

// errorf builds every error the store returns: prefixed "sqlite: " and with
// the driver's error translated at this boundary, so callers test
// store.ErrNotFound and store.ErrClosed with errors.Is and never see a
// database/sql or driver sentinel in that role.
func (s *Store) errorf(err error, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	switch {
	case s.closed.Load() || isDBClosed(err):
		// The cause stays in the chain (and in the message) beside ErrClosed.
		return fmt.Errorf("sqlite: %s: %w: %w", msg, store.ErrClosed, err)
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("sqlite: %s: %w", msg, store.ErrNotFound)
	}
	return fmt.Errorf("sqlite: %s: %w", msg, err)
}

// closedError is returned by a call made after Close, before it touches the
// database.
func closedError(op string) error {
	return fmt.Errorf("sqlite: %s: %w", op, store.ErrClosed)
}

// isDBClosed reports the error database/sql returns once its *sql.DB was
// closed, for instance by a caller closing DB() directly. database/sql does
// not export it, so its fixed text is matched.
func isDBClosed(err error) bool {
	return err != nil && strings.Contains(err.Error(), "sql: database is closed")
}

// sqliteCode returns the extended SQLite result code in err's chain, or 0.
func sqliteCode(err error) int {
	var e *moderncsqlite.Error
	if errors.As(err, &e) {
		return e.Code()
	}
	return 0
}
