package mysql

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"

	driver "github.com/go-sql-driver/mysql"

	"github.com/cronfence/cronfence/store"
)

// The server's error numbers the store acts on.
const (
	errDupKey        = 1062 // ER_DUP_ENTRY
	errNoSuchTable   = 1146 // ER_NO_SUCH_TABLE
	errBadField      = 1054 // ER_BAD_FIELD_ERROR
	errLockWait      = 1205 // ER_LOCK_WAIT_TIMEOUT (and MariaDB's NOWAIT)
	errDeadlock      = 1213 // ER_LOCK_DEADLOCK
	errReadOnly      = 1290 // ER_OPTION_PREVENTS_STATEMENT (--read-only)
	errReadOnlyTx    = 1792 // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
	errNoSuchProcess = 1305 // ER_SP_DOES_NOT_EXIST
)

// mysqlCode returns the server's error number in err's chain, or 0.
func mysqlCode(err error) uint16 {
	var e *driver.MySQLError
	if errors.As(err, &e) {
		return e.Number
	}
	return 0
}

// isMissingSchema reports a statement refused because a table, column or
// procedure it names does not exist.
func isMissingSchema(err error) bool {
	switch mysqlCode(err) {
	case errNoSuchTable, errBadField, errNoSuchProcess:
		return true
	}
	return false
}

// errorf builds every error the store returns: prefixed "mysql: " and with
// the driver's error translated at this boundary, so callers test
// store.ErrNotFound and store.ErrClosed with errors.Is and never see a
// database/sql or driver sentinel in that role.
func (s *Store) errorf(err error, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	switch {
	case s.closed.Load() || isDBClosed(err):
		return fmt.Errorf("mysql: %s: %w: %w", msg, store.ErrClosed, err)
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("mysql: %s: %w", msg, store.ErrNotFound)
	case mysqlCode(err) == errReadOnly || mysqlCode(err) == errReadOnlyTx:
		return fmt.Errorf("mysql: %s: the server is read-only (a replica, or a primary demoted by a failover): %w", msg, err)
	}
	return fmt.Errorf("mysql: %s: %w", msg, err)
}

// closedError is returned by a call made after Close, before it touches the
// database.
func closedError(op string) error {
	return fmt.Errorf("mysql: %s: %w", op, store.ErrClosed)
}

// isDBClosed reports the error database/sql returns once its *sql.DB was
// closed. database/sql does not export it, so its fixed text is matched.
func isDBClosed(err error) bool {
	return err != nil && strings.Contains(err.Error(), "sql: database is closed")
}
