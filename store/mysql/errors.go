package mysql

import (
	"errors"
	"fmt"

	driver "github.com/go-sql-driver/mysql"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/internal/sqlstore"
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

// errorf builds every error the store returns (see sqlstore.Error), saying
// so when the server refused a write for being read-only.
func (s *Store) errorf(err error, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if code := mysqlCode(err); (code == errReadOnly || code == errReadOnlyTx) && !s.closed.Load() {
		return fmt.Errorf("mysql: %s: the server is read-only (a replica, or a primary demoted by a failover): %w", msg, err)
	}
	return sqlstore.Error("mysql", s.closed.Load(), err, msg)
}

// closedError is returned by a call made after Close, before it touches the
// database.
func closedError(op string) error {
	return fmt.Errorf("mysql: %s: %w", op, store.ErrClosed)
}
